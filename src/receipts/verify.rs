//! `ralph-hooks verify RECEIPT`: the receipt's checks again, on the
//! receipt's tree, in a temporary git worktree.
//!
//! A receipt file is input from anyone: nothing in it is trusted that a
//! signature by an allowed signer does not vouch for.
//!
//! - A signed receipt whose signature does not hold is refused before
//!   anything runs; so is a receipt whose tree is not an object id or whose
//!   `projectPath` leaves the tree.
//! - Its check commands come from the file, not from the code: they run
//!   only when an allowed signer signed it or the caller says so
//!   ([`Options::run_commands`]), in the checkout's project folder, with
//!   the live project's Claude Code variables taken away.
//! - The tree comes from the repository's objects; when they are not there
//!   (a receipt of uncommitted work, a project outside git), the work as it
//!   is now is hashed the same way, less this installation's state folder
//!   and the receipt file (never less what the receipt asks to leave out),
//!   and used if it is that tree. [`Options::require_work`] asks for the
//!   work's tree only (a CI job on a pull request's head).
//! - The commit checked out is HEAD when its tree is the receipt's, else one
//!   made with `git commit-tree` on top of HEAD (no ref points at it, the
//!   stash is untouched), detached in a private worktree under the temp
//!   dir, which is removed afterwards (only that worktree: never a
//!   repository-wide prune), on failure too; one left by a verify that was
//!   killed is removed by the next.
//! - Per condition: reproduced, differs (with what), cannot be checked here
//!   (why), or recorded (a promise: Claude's words, which no re-run makes
//!   again). A difference the checkout itself may explain (submodules it
//!   leaves empty, filters it does not run, git-ignored files it does not
//!   have) is "cannot be checked here", never "differs". The receipt's own
//!   status and result must follow from its recorded conditions.
//!
//! The comparisons are pure ([`compare_command`], [`compare_diagnostics`]);
//! the diagnostics re-run is the caller's (the project check lives above).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use serde_json::{Value, json};

use super::envelope;
use super::statement::{self, Condition, Receipt, RecordedDiagnostics, RecordedRun};
use super::tree::{self, Hashed, TempDir};
use crate::ralph::checks::{self, CheckRun, Walls};

/// What became of one condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Reproduced,
    Differs,
    CannotCheck,
    /// Not something a re-run can make again (the promise); said as recorded.
    Recorded,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Reproduced => "reproduced",
            Outcome::Differs => "differs",
            Outcome::CannotCheck => "cannot_check",
            Outcome::Recorded => "recorded",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub name: String,
    pub outcome: Outcome,
    pub detail: String,
}

/// Exit status: every condition re-run and reproduced, on a COMPLETED
/// receipt.
pub const EXIT_REPRODUCED: u8 = 0;
/// Something differs, or the receipt contradicts itself.
pub const EXIT_DIFFERS: u8 = 1;
/// Something could not be checked here (and nothing differs).
pub const EXIT_CANNOT_CHECK: u8 = 2;
/// Nothing differs, but the receipt is no evidence of a finished loop: its
/// loop did not complete (FAILED, CANCELLED), or nothing in it could be
/// re-run (a promise-only loop).
pub const EXIT_NOT_EVIDENCE: u8 = 3;

/// The whole answer.
#[derive(Debug, Clone)]
pub struct Report {
    pub loop_id: String,
    pub status: String,
    pub tree: Option<String>,
    /// Where the tree came from, for people.
    pub tree_source: String,
    pub signature: String,
    pub verdicts: Vec<Verdict>,
    /// What else the user must know (commands not run, entries ignored).
    pub notes: Vec<String>,
}

impl Report {
    /// [`EXIT_DIFFERS`] before [`EXIT_CANNOT_CHECK`] before
    /// [`EXIT_NOT_EVIDENCE`]; [`EXIT_REPRODUCED`] only when at least one
    /// condition was re-run and held as recorded on a COMPLETED receipt.
    pub fn exit_code(&self) -> u8 {
        let any = |outcome: Outcome| self.verdicts.iter().any(|v| v.outcome == outcome);
        if any(Outcome::Differs) {
            EXIT_DIFFERS
        } else if any(Outcome::CannotCheck) {
            EXIT_CANNOT_CHECK
        } else if self.status != "COMPLETED" || !any(Outcome::Reproduced) {
            EXIT_NOT_EVIDENCE
        } else {
            EXIT_REPRODUCED
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "loopId": self.loop_id,
            "status": self.status,
            "tree": self.tree,
            "treeSource": self.tree_source,
            "signature": self.signature,
            "conditions": self.verdicts.iter().map(|v| json!({
                "name": v.name, "outcome": v.outcome.as_str(), "detail": v.detail,
            })).collect::<Vec<_>>(),
            "notes": self.notes,
            "exitCode": self.exit_code(),
        })
    }

    /// The summary line, from the exit code.
    pub fn summary(&self) -> String {
        match self.exit_code() {
            EXIT_REPRODUCED => "Everything reproduced.".into(),
            EXIT_DIFFERS => "Something differs from the receipt.".into(),
            EXIT_CANNOT_CHECK => "Some conditions could not be checked here.".into(),
            _ if self.status != "COMPLETED" => format!(
                "Nothing differs, but the loop did not complete ({}): this receipt is no evidence that the work is done.",
                escape(&self.status)
            ),
            _ => "Nothing was re-run that held: no condition of this receipt can be made again here, so it is no evidence that the work is done.".into(),
        }
    }

    /// For a terminal: every field that came from the receipt file has its
    /// control characters escaped (an escape sequence in a loop id could
    /// rewrite the lines around it).
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "Receipt of loop {} ({}).\nSignature: {}\nTree: {} ({})\n",
            escape(&self.loop_id),
            escape(&self.status),
            escape(&self.signature),
            escape(self.tree.as_deref().unwrap_or("none")),
            escape(&self.tree_source)
        );
        for note in &self.notes {
            text.push_str(&format!("Note: {}\n", escape(note)));
        }
        for verdict in &self.verdicts {
            let word = match verdict.outcome {
                Outcome::Reproduced => "reproduced",
                Outcome::Differs => "DIFFERS",
                Outcome::CannotCheck => "cannot be checked here",
                Outcome::Recorded => "recorded",
            };
            text.push_str(&format!(
                "- {}: {word} — {}\n",
                escape(&verdict.name),
                escape(&verdict.detail)
            ));
        }
        text.push_str(&self.summary());
        text
    }
}

fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    crate::util::text::escape_controls(text)
}

/// How far verify may go with a receipt.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Whether the receipt's check commands may run: it is signed by an
    /// allowed signer, or the user said `--run-unsigned` after reading them.
    pub run_commands: bool,
    /// Only the work here as it is now may be the receipt's tree (not any
    /// tree in the repository's history): a pull request's head.
    pub require_work: bool,
    /// Left out when the work is hashed, relative to the project root:
    /// this installation's state folder and the receipt file itself.
    pub excluded: Vec<String>,
}

/// The diagnostics condition computed again, by the caller.
#[derive(Debug, Clone, Default)]
pub struct Rerun {
    pub errors: u64,
    pub warnings: u64,
    pub holds: bool,
    /// Server name → version, for the servers that checked files.
    pub servers: BTreeMap<String, String>,
    /// Languages no installed server could check here.
    pub unchecked: Vec<String>,
    /// Files no server answered for (timeouts, crashes).
    pub inconclusive: Vec<String>,
}

/// Reads a receipt file's text: a bare statement, or a DSSE envelope whose
/// signature must hold. The receipt, how it was signed, and whether a key
/// in `allowed_signers` signed it; an error when it is refused.
pub fn load(text: &str, allowed_signers: Option<&Path>) -> Result<(Receipt, String, bool), String> {
    let value: Value = serde_json::from_str(text).map_err(|error| format!("not JSON: {error}"))?;
    let (statement, signature) = if envelope::is_envelope(&value) {
        let signed = envelope::open(&value, allowed_signers)?;
        let statement: Value = serde_json::from_slice(&signed.statement)
            .map_err(|error| format!("the signed payload is not JSON: {error}"))?;
        (statement, signed.described)
    } else {
        let said = if allowed_signers.is_some() {
            return Err(
                "the receipt is not signed, and --allowed-signers asks for a signature".into(),
            );
        } else {
            "none (an unsigned receipt: an edit shows only where a re-run differs)".to_string()
        };
        (value, said)
    };
    Ok((
        statement::parse(&statement)?,
        signature,
        allowed_signers.is_some(),
    ))
}

/// Compares a check's run here with the receipt's.
pub fn compare_command(name: &str, recorded: &RecordedRun, here: &CheckRun) -> Verdict {
    let describe = |exit: Option<i32>, timed_out: bool| match (timed_out, exit) {
        (true, _) => "timed out".to_string(),
        (false, Some(code)) => format!("exit {code}"),
        (false, None) => "killed by a signal".to_string(),
    };
    let same = here.exit_code == recorded.exit_code && here.timed_out == recorded.timed_out;
    let output = match &recorded.output_sha256 {
        Some(digest) if *digest == here.output_sha256 => "its output is identical (sha256)",
        Some(_) => "its output differs from the recorded digest (timings and paths often do)",
        None => "no output digest recorded",
    };
    if same {
        Verdict {
            name: name.into(),
            outcome: Outcome::Reproduced,
            detail: format!(
                "{} as recorded; {output}",
                describe(here.exit_code, here.timed_out)
            ),
        }
    } else {
        Verdict {
            name: name.into(),
            outcome: Outcome::Differs,
            detail: format!(
                "{} here, {} in the receipt",
                describe(here.exit_code, here.timed_out),
                describe(recorded.exit_code, recorded.timed_out)
            ),
        }
    }
}

/// Compares the diagnostics condition computed here with the receipt's.
pub fn compare_diagnostics(recorded: &RecordedDiagnostics, here: &Rerun) -> Verdict {
    let name = recorded.name.clone();
    let Some((errors, warnings)) = recorded.after else {
        return Verdict {
            name,
            outcome: Outcome::Recorded,
            detail: "never evaluated: the loop ended before a Stop checked it".into(),
        };
    };
    let missing: Vec<&String> = recorded
        .servers
        .keys()
        .filter(|server| !here.servers.contains_key(*server))
        .collect();
    if !missing.is_empty() || !here.unchecked.is_empty() {
        let mut why: Vec<String> = missing
            .iter()
            .map(|server| format!("{server} did not run here (not installed?)"))
            .collect();
        why.extend(here.unchecked.iter().cloned());
        return Verdict {
            name,
            outcome: Outcome::CannotCheck,
            detail: why.join("; "),
        };
    }
    if !here.inconclusive.is_empty() {
        return Verdict {
            name,
            outcome: Outcome::CannotCheck,
            detail: format!("no answer for {}", here.inconclusive.join(", ")),
        };
    }
    let mut versions = Vec::new();
    for (server, version) in &recorded.servers {
        match here.servers.get(server) {
            Some(now) if now != version => {
                versions.push(format!("{server} {now} here, {version} in the receipt"))
            }
            _ => {}
        }
    }
    let counted = |e: u64, w: u64| format!("{e} error(s), {w} warning(s)");
    let same = here.errors == errors && here.warnings == warnings && here.holds == recorded.passed;
    let mut detail = if same {
        format!("{} as recorded", counted(errors, warnings))
    } else {
        format!(
            "{} here ({}), {} in the receipt ({})",
            counted(here.errors, here.warnings),
            if here.holds { "holds" } else { "fails" },
            counted(errors, warnings),
            if recorded.passed { "held" } else { "failed" }
        )
    };
    if !versions.is_empty() {
        detail.push_str(&format!("; other versions: {}", versions.join(", ")));
    }
    Verdict {
        name,
        outcome: if same {
            Outcome::Reproduced
        } else {
            Outcome::Differs
        },
        detail,
    }
}

/// The receipt's tree checked out detached in a private temp worktree;
/// that worktree (and nothing else) removed when dropped.
struct Checkout {
    root: PathBuf,
    hashed: Option<Hashed>,
    dir: PathBuf,
    /// Where git keeps the worktree's administrative files
    /// (`.git/worktrees/<name>`), read from its `.git` file.
    admin: Option<PathBuf>,
    /// Whether the commit has the repository's history behind it.
    history: &'static str,
    _temp: TempDir,
}

/// The temp folder name of a verify run by process `pid`.
const CHECKOUT_PREFIX: &str = "ralph-verify-";

/// The checkouts alive in this process, for [`remove_after_signal`]: the
/// repository, the worktree, its administrative folder.
type Live = (PathBuf, PathBuf, Option<PathBuf>);
static LIVE: std::sync::Mutex<Vec<Live>> = std::sync::Mutex::new(Vec::new());
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// For a thread that got SIGINT, SIGTERM or SIGHUP: no further check
/// starts, the running one is killed, and every checkout of this process
/// is removed (its worktree and its temp folder). The caller then ends the
/// process.
pub fn remove_after_signal() {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
    crate::util::process::kill_all_groups();
    let live = LIVE
        .lock()
        .map(|mut live| std::mem::take(&mut *live))
        .unwrap_or_default();
    for (root, dir, admin) in live {
        remove_own_worktree(crate::util::git::command(&root), &dir, admin.as_deref());
    }
    // The checkouts' temp folders, the index copies, the scratch stores.
    tree::remove_live_temp_dirs();
    // A check that started while the lock was taken.
    crate::util::process::kill_all_groups();
}

/// After a signal: this thread waits for the one handling it to end the
/// process (a check killed by it must not be reported as a result).
pub fn stop_if_interrupted() {
    if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
}

impl Checkout {
    fn git(&self) -> std::process::Command {
        match &self.hashed {
            Some(hashed) => hashed.store_git(&self.root),
            None => crate::util::git::command(&self.root),
        }
    }

    fn make(root: &Path, hashed: Option<Hashed>, tree: &str) -> anyhow::Result<Checkout> {
        let in_repository = hashed.is_none();
        if in_repository {
            remove_stale_checkouts(root);
        }
        let temp = TempDir::new("verify")?;
        let mut checkout = Checkout {
            root: root.to_path_buf(),
            hashed,
            dir: temp.path().join("tree"),
            admin: None,
            history: "",
            _temp: temp,
        };
        // HEAD itself when it is the receipt's tree: the checks see the
        // history and tags the loop's checks saw (`git describe`).
        let head = in_repository.then(|| rev_parse(root, "HEAD")).flatten();
        let head_tree = in_repository
            .then(|| rev_parse(root, "HEAD^{tree}"))
            .flatten();
        let commit = if head.is_some() && head_tree.as_deref() == Some(tree) {
            checkout.history = "HEAD, whose tree it is";
            head.unwrap_or_default()
        } else {
            let mut commit = checkout.git();
            commit.args([
                "commit-tree",
                tree,
                "-m",
                "ralph-hooks verify (no ref points here)",
            ]);
            if let Some(head) = &head {
                commit.args(["-p", head]);
                checkout.history = "a commit of that tree on top of HEAD";
            } else {
                checkout.history = "a commit of that tree without history";
            }
            commit
                .env("GIT_AUTHOR_NAME", "ralph-hooks")
                .env("GIT_AUTHOR_EMAIL", "ralph-hooks@localhost")
                .env("GIT_AUTHOR_DATE", "@0 +0000")
                .env("GIT_COMMITTER_NAME", "ralph-hooks")
                .env("GIT_COMMITTER_EMAIL", "ralph-hooks@localhost")
                .env("GIT_COMMITTER_DATE", "@0 +0000");
            let output = tree::run(commit, "commit-tree")?;
            String::from_utf8_lossy(&output.stdout).trim().to_string()
        };
        let mut add = checkout.git();
        add.args(["worktree", "add", "--quiet", "--detach"])
            .arg(&checkout.dir)
            .arg(&commit);
        let added = tree::run(add, "worktree add");
        checkout.admin = admin_dir(&checkout.dir);
        if let Ok(mut live) = LIVE.lock() {
            live.push((
                checkout.root.clone(),
                checkout.dir.clone(),
                checkout.admin.clone(),
            ));
        }
        added?;
        Ok(checkout)
    }
}

/// `git rev-parse --verify --quiet REV`, if it names something.
fn rev_parse(root: &Path, rev: &str) -> Option<String> {
    let mut command = crate::util::git::command(root);
    command.args(["rev-parse", "--verify", "--quiet", rev]);
    let output = command
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !text.is_empty()).then_some(text)
}

/// The administrative folder a linked worktree's `.git` file points at.
fn admin_dir(worktree: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(worktree.join(".git")).ok()?;
    let path = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
    let path = if path.is_absolute() {
        path
    } else {
        worktree.join(path)
    };
    // Only ever `<git dir>/worktrees/<name>`: never remove anything else.
    (path.parent()?.file_name()? == "worktrees").then_some(path)
}

/// Removes one worktree of verify's own: `git worktree remove --force`, and
/// when git could not, its administrative folder and its files directly.
/// Never `git worktree prune`, which would also drop the user's worktrees
/// whose folders are not there right now.
fn remove_own_worktree(git: std::process::Command, dir: &Path, admin: Option<&Path>) {
    let mut remove = git;
    remove
        .args(["worktree", "remove", "--force"])
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let removed = remove.status().is_ok_and(|status| status.success());
    if !removed {
        let _ = tree::remove_tree(dir);
        if let Some(admin) = admin {
            let _ = tree::remove_tree(admin);
        }
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|(_, dir, _)| *dir != self.dir);
        }
        remove_own_worktree(self.git(), &self.dir, self.admin.as_deref());
    }
}

/// Worktrees an earlier verify left behind when it was killed (Ctrl-C
/// during a long check): registered in `root`'s repository, under the temp
/// dir, named by a process that is gone. Removed with their temp folders.
fn remove_stale_checkouts(root: &Path) {
    let mut list = crate::util::git::command(root);
    list.args(["worktree", "list", "--porcelain"]);
    let Ok(output) = list
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return;
    };
    let temp = std::env::temp_dir();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some(path) = line.strip_prefix("worktree ") else {
            continue;
        };
        let dir = PathBuf::from(path);
        let Some(parent) = dir.parent() else { continue };
        let name = parent
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(pid) = name
            .strip_prefix(CHECKOUT_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if dir.file_name().is_none_or(|name| name != "tree")
            || parent.parent() != Some(temp.as_path())
            || pid == std::process::id()
            || crate::util::process::is_alive(pid)
        {
            continue;
        }
        let admin = admin_dir(&dir);
        remove_own_worktree(crate::util::git::command(root), &dir, admin.as_deref());
        let _ = tree::remove_tree(parent);
    }
}

/// Every condition as one verdict, for a receipt whose tree is not here.
fn none_checkable(receipt: &Receipt, why: &str) -> Vec<Verdict> {
    receipt
        .conditions
        .iter()
        .map(|condition| match condition {
            Condition::Promise { found } => promise_verdict(*found),
            _ => Verdict {
                name: condition.name(),
                outcome: Outcome::CannotCheck,
                detail: why.to_string(),
            },
        })
        .collect()
}

fn promise_verdict(found: Option<bool>) -> Verdict {
    let said = match found {
        Some(true) => "found",
        Some(false) => "not found",
        None => "never evaluated",
    };
    Verdict {
        name: "promise".into(),
        outcome: Outcome::Recorded,
        detail: format!(
            "{said} in Claude's last message, which the receipt does not hold: no re-run can say it again"
        ),
    }
}

/// What the checkout may lack that the loop's checks had: a difference
/// found there may be the checkout's, not the work's.
#[derive(Debug, Default)]
struct Caveats {
    /// A check that differs may differ for these (said, exit 2).
    differs: Vec<String>,
    /// A check's result at all (reproduced or not) may come from outside
    /// the tree for these.
    any: Vec<String>,
}

/// Names the first few of `items`.
fn some_of(items: &[String]) -> String {
    let mut named: Vec<String> = items
        .iter()
        .take(3)
        .map(|item| escape(item).into_owned())
        .collect();
    if items.len() > 3 {
        named.push(format!("{} more", items.len() - 3));
    }
    named.join(", ")
}

/// What in the checked-out tree (or the project here) verify cannot make
/// as the loop had it.
fn caveats(
    checkout: &Checkout,
    tree: &str,
    root: &Path,
    in_repository: bool,
    excluded: &[String],
) -> Caveats {
    let mut found = Caveats::default();
    let mut list = checkout.git();
    list.args(["ls-tree", "-r", "-z", tree]);
    let listed = list
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map(|output| output.stdout)
        .unwrap_or_default();
    let (mut gitlinks, mut filtered, mut links_out) = (Vec::new(), Vec::new(), Vec::new());
    for entry in listed.split(|&b| b == 0).filter(|entry| !entry.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        let mode = meta.split(' ').next().unwrap_or("");
        match mode {
            "160000" => gitlinks.push(path.to_string()),
            "120000" => {
                let target = std::fs::read_link(checkout.dir.join(path)).unwrap_or_default();
                if target.is_absolute() {
                    links_out.push(format!("{path} -> {}", target.display()));
                }
            }
            _ if path == ".gitattributes" || path.ends_with("/.gitattributes") => {
                let text = std::fs::read_to_string(checkout.dir.join(path)).unwrap_or_default();
                if text
                    .lines()
                    .any(|line| !line.trim_start().starts_with('#') && line.contains("filter="))
                {
                    filtered.push(path.to_string());
                }
            }
            _ => {}
        }
    }
    if !gitlinks.is_empty() {
        found.differs.push(format!(
            "the tree has submodule(s) or nested repositories ({}), which the checkout leaves empty",
            some_of(&gitlinks)
        ));
    }
    if !filtered.is_empty() {
        found.differs.push(format!(
            "{} map(s) files to a filter (git-lfs, git-crypt, …), which the checkout does not run: its files are in their stored form",
            some_of(&filtered)
        ));
    }
    if !links_out.is_empty() {
        found.any.push(format!(
            "absolute symlink(s) in the tree ({}) lead out of the checkout",
            some_of(&links_out)
        ));
    }
    if in_repository {
        let ignored = ignored_here(root, excluded);
        if !ignored.is_empty() {
            found.differs.push(format!(
                "the project here has git-ignored files the tree leaves out ({}), which the loop's checks may have read",
                some_of(&ignored)
            ));
        }
    }
    found
}

/// Git-ignored files and folders in the project here, less `excluded` (the
/// state folder): inputs a check may read that no tree has.
fn ignored_here(root: &Path, excluded: &[String]) -> Vec<String> {
    let excludes = tree::global_excludes_file(root);
    let mut command = crate::util::git::command(root);
    if let Some(file) = &excludes {
        let mut setting = std::ffi::OsString::from("core.excludesFile=");
        setting.push(file);
        command.arg("-c").arg(setting);
    }
    command.args([
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--directory",
        "--no-empty-directory",
    ]);
    let Ok(output) = command
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    output
        .stdout
        .split(|&b| b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| String::from_utf8_lossy(entry).into_owned())
        .filter(|path| {
            let bare = path.trim_end_matches('/');
            !excluded.iter().any(|left_out| {
                let left_out = left_out.trim_end_matches('/');
                bare == left_out
                    || bare.starts_with(&format!("{left_out}/"))
                    || left_out.starts_with(&format!("{bare}/"))
            })
        })
        .collect()
}

/// A verdict with the checkout's caveats applied: a difference (or, for
/// links out of the tree, any result) the checkout may explain is "cannot
/// be checked here".
fn with_caveats(verdict: Verdict, caveats: &Caveats) -> Verdict {
    let why = match verdict.outcome {
        Outcome::Differs if !caveats.differs.is_empty() || !caveats.any.is_empty() => {
            let mut all = caveats.any.clone();
            all.extend(caveats.differs.iter().cloned());
            all
        }
        Outcome::Reproduced if !caveats.any.is_empty() => caveats.any.clone(),
        _ => return verdict,
    };
    Verdict {
        name: verdict.name,
        outcome: Outcome::CannotCheck,
        detail: format!(
            "{}; but {}: the checkout is not the loop's work in this",
            verdict.detail,
            why.join("; ")
        ),
    }
}

/// Variables the live session sets that would point a check at the live
/// project instead of the checkout: Claude Code's (`CLAUDE_PROJECT_DIR`
/// and the rest) and this tool's state locations.
fn check_environment(project: &Path) -> checks::Environment {
    let mut remove: Vec<String> = std::env::vars_os()
        .filter_map(|(key, _)| key.into_string().ok())
        .filter(|key| {
            key.starts_with("CLAUDE")
                || key == "RALPH_HOOKS_STATE_DIR"
                || key == "RALPH_HOOKS_DAEMON_ROOT"
        })
        .collect();
    remove.sort();
    checks::Environment {
        remove,
        set: vec![(
            "CLAUDE_PROJECT_DIR".to_string(),
            project.as_os_str().to_owned(),
        )],
    }
}

/// `command` to run in a PID namespace of its own (bubblewrap, with the
/// whole file system as it is, writable as it is): when the check ends,
/// everything it started ends with it, a daemon it detached (`setsid`, a
/// server's `--daemonize`) too. As is where bubblewrap cannot make one.
fn in_own_pid_namespace(command: &str, project: &Path) -> String {
    let sh = crate::util::trusted::program("sh", Some(project));
    let Some(walled) = crate::util::confine::own_pids(&sh) else {
        return command.to_string();
    };
    let quote = |text: &str| format!("'{}'", text.replace('\'', "'\\''"));
    let mut words = vec![quote(&walled.get_program().to_string_lossy())];
    words.extend(walled.get_args().map(|arg| quote(&arg.to_string_lossy())));
    format!("exec {} -c {}", words.join(" "), quote(command))
}

/// Whether `root` looks like the receipt's project, for a receipt whose
/// tree is not in a repository: hashing "the work here" reads every file
/// under it, which in a home or downloads folder is everything the user
/// has.
fn plausibly_the_project(root: &Path, receipt: &Receipt) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if home.as_deref().is_some_and(|home| same(home, root)) || root.parent().is_none() {
        return false;
    }
    root.join(".claude").join("orchestrator").is_dir()
        || root
            .file_name()
            .is_some_and(|name| !receipt.name.is_empty() && name.to_string_lossy() == receipt.name)
}

/// Re-runs `receipt` in `root`'s repository (or its work as it is now,
/// less `options.excluded`). `diagnose` computes a diagnostics condition
/// in a checked-out project folder.
pub fn verify(
    root: &Path,
    receipt: &Receipt,
    options: &Options,
    signature: String,
    diagnose: &mut dyn FnMut(&Path, &RecordedDiagnostics) -> anyhow::Result<Rerun>,
) -> anyhow::Result<Report> {
    let mut report = Report {
        loop_id: receipt.loop_id.clone(),
        status: receipt.status.clone(),
        tree: receipt.tree.clone(),
        tree_source: String::new(),
        signature,
        verdicts: Vec::new(),
        notes: Vec::new(),
    };
    // The receipt's own claim first: a status its conditions do not bear
    // out is a difference whatever the re-run finds.
    let inconsistent = receipt.inconsistencies();
    if !inconsistent.is_empty() {
        report.verdicts.push(Verdict {
            name: "status".into(),
            outcome: Outcome::Differs,
            detail: format!(
                "the receipt contradicts itself: {}",
                inconsistent.join("; ")
            ),
        });
    }
    let Some(tree) = receipt.tree.clone() else {
        let why = format!(
            "the receipt names no tree ({})",
            receipt.tree_note.as_deref().unwrap_or("none was recorded")
        );
        report.tree_source = why.clone();
        report.verdicts.extend(none_checkable(receipt, &why));
        return Ok(report);
    };
    if receipt
        .excluded
        .iter()
        .any(|path| !options.excluded.contains(path))
    {
        report.notes.push(format!(
            "the receipt asks to leave {} out of the work; verify leaves out only this installation's state folder and the receipt file",
            receipt.excluded.join(", ")
        ));
    }
    let here_name = root
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !receipt.name.is_empty() && receipt.name != here_name {
        report.notes.push(format!(
            "the receipt is of a project folder named {:?}, this one is {:?}",
            receipt.name, here_name
        ));
    }
    let in_repo = tree::repository_prefix(root).is_some();
    let hashed = if in_repo && !options.require_work && tree::has_tree(root, &tree) {
        report.tree_source = "from this repository's objects".into();
        None
    } else {
        if !in_repo && !plausibly_the_project(root, receipt) {
            let why = format!(
                "the tree is not in a git repository here, and {} does not look like the receipt's project {:?} (no .claude/orchestrator, another name): run verify in the project's folder",
                root.display(),
                receipt.name
            );
            report.tree_source = "not found here".into();
            report.verdicts.extend(none_checkable(receipt, &why));
            return Ok(report);
        }
        let now = tree::of_work(root, &options.excluded)
            .with_context(|| format!("cannot hash the work in {}", root.display()))?;
        if now.tree != tree {
            report.tree_source = "not found here".into();
            if options.require_work {
                report.verdicts.push(Verdict {
                    name: "tree".into(),
                    outcome: Outcome::Differs,
                    detail: format!(
                        "the work here (less the receipt file) is tree {}, not the receipt's: the receipt is not of this commit",
                        now.tree
                    ),
                });
                report.verdicts.extend(none_checkable(
                    receipt,
                    "not run: the work here is another tree",
                ));
            } else {
                let why = format!(
                    "tree {tree} is not in this repository, and the work here is tree {}: fetch the commit that holds it, or verify where the work is",
                    now.tree
                );
                report.verdicts.extend(none_checkable(receipt, &why));
            }
            return Ok(report);
        }
        report.tree_source = "the work here as it is now, which is that tree".into();
        // In a repository the objects are now in its store; outside one
        // they are in the scratch store, kept until the checkout is gone.
        now.scratch_git_dir.is_some().then_some(now)
    };
    let in_repository = hashed.is_none();
    let checkout = Checkout::make(root, hashed, &tree)?;
    if !checkout.history.is_empty() {
        report
            .tree_source
            .push_str(&format!("; checked out as {}", checkout.history));
    }
    // The receipt's projectPath is a plain relative path (parse checked);
    // it must also be a real folder of the checkout, not a link out of it.
    let project = checkout.dir.join(&receipt.prefix);
    let inside = match (
        std::fs::canonicalize(&project),
        std::fs::canonicalize(&checkout.dir),
    ) {
        (Ok(project), Ok(top)) => project.is_dir() && project.starts_with(top),
        _ => false,
    };
    if !inside {
        let why = format!(
            "the receipt's project folder {:?} is not a folder in the tree",
            receipt.prefix
        );
        report.verdicts.extend(none_checkable(receipt, &why));
        drop(checkout);
        return Ok(report);
    }
    let caveats = caveats(&checkout, &tree, root, in_repository, &options.excluded);
    let timeout = Duration::from_secs(receipt.check_timeout_secs.max(1));
    let environment = check_environment(&project);
    for condition in &receipt.conditions {
        stop_if_interrupted();
        let verdict = match condition {
            Condition::Command { command, run } => match run {
                None => Verdict {
                    name: condition.name(),
                    outcome: Outcome::Recorded,
                    detail: "never run: the loop ended before a Stop checked it".into(),
                },
                Some(_) if !options.run_commands => Verdict {
                    name: condition.name(),
                    outcome: Outcome::CannotCheck,
                    detail: "not run: the command comes from the receipt file, which no allowed signer signed (read it, then pass --run-unsigned to run it)".into(),
                },
                Some(recorded) => {
                    let walled = in_own_pid_namespace(command, &project);
                    let here =
                        checks::run_in(&project, &walled, timeout, &Walls::None, &environment)
                            .map(|run| CheckRun {
                                command: command.clone(),
                                ..run
                            });
                    stop_if_interrupted();
                    let here =
                        here.with_context(|| format!("cannot run check `{}`", escape(command)))?;
                    with_caveats(compare_command(&condition.name(), recorded, &here), &caveats)
                }
            },
            Condition::Promise { found } => promise_verdict(*found),
            Condition::Diagnostics(recorded) if recorded.after.is_none() => {
                compare_diagnostics(recorded, &Rerun::default())
            }
            Condition::Diagnostics(recorded) => match diagnose(&project, recorded).inspect(|_| stop_if_interrupted()) {
                Ok(here) => with_caveats(compare_diagnostics(recorded, &here), &caveats),
                Err(error) => Verdict {
                    name: condition.name(),
                    outcome: Outcome::CannotCheck,
                    detail: format!("the check could not run: {error:#}"),
                },
            },
        };
        report.verdicts.push(verdict);
    }
    drop(checkout);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(exit: i32, digest: &str) -> CheckRun {
        CheckRun {
            command: "t".into(),
            exit_code: Some(exit),
            timed_out: false,
            duration_ms: 1,
            output_hash: String::new(),
            output_sha256: digest.into(),
            tail: String::new(),
            confined: false,
        }
    }

    #[test]
    fn a_check_differs_when_its_exit_code_does() {
        let recorded = RecordedRun {
            exit_code: Some(0),
            timed_out: false,
            output_sha256: Some("aa".into()),
        };
        let same = compare_command("check:t", &recorded, &run(0, "aa"));
        assert_eq!(same.outcome, Outcome::Reproduced);
        assert!(same.detail.contains("identical"), "{}", same.detail);
        let other_output = compare_command("check:t", &recorded, &run(0, "bb"));
        assert_eq!(other_output.outcome, Outcome::Reproduced);
        let failing = compare_command("check:t", &recorded, &run(1, "aa"));
        assert_eq!(failing.outcome, Outcome::Differs);
        assert_eq!(failing.detail, "exit 1 here, exit 0 in the receipt");
    }

    #[test]
    fn diagnostics_need_the_same_servers_and_counts() {
        let recorded = RecordedDiagnostics {
            name: "project".into(),
            scope: "project".into(),
            paths: vec![],
            files: vec![],
            no_warnings: false,
            servers: [("ty".to_string(), "ty 1".to_string())].into(),
            after: Some((0, 1)),
            passed: true,
        };
        let mut here = Rerun {
            errors: 0,
            warnings: 1,
            holds: true,
            servers: [("ty".to_string(), "ty 2".to_string())].into(),
            ..Rerun::default()
        };
        let verdict = compare_diagnostics(&recorded, &here);
        assert_eq!(verdict.outcome, Outcome::Reproduced);
        assert!(
            verdict.detail.contains("ty ty 2 here"),
            "{}",
            verdict.detail
        );
        here.errors = 2;
        here.holds = false;
        assert_eq!(
            compare_diagnostics(&recorded, &here).outcome,
            Outcome::Differs
        );
        here.servers.clear();
        assert_eq!(
            compare_diagnostics(&recorded, &here).outcome,
            Outcome::CannotCheck
        );
    }
}

//! `ralph-hooks verify RECEIPT`: the receipt's checks again, on the
//! receipt's tree, in a temporary git worktree.
//!
//! - A signed receipt whose signature does not hold is refused before
//!   anything runs.
//! - The tree comes from the repository's objects; when they are not there
//!   (a receipt of uncommitted work, a project outside git), the work as it
//!   is now is hashed the same way and used if it is that tree.
//! - A commit is made from the tree with `git commit-tree` (no ref points
//!   at it, the stash is untouched) and checked out detached in a worktree
//!   under the temp dir, which is removed afterwards (`git worktree remove
//!   --force`, `git worktree prune`), on failure too.
//! - Per condition: reproduced, differs (with what), cannot be checked here
//!   (why), or recorded (a promise: Claude's words, which no re-run makes
//!   again). Exit 0 only when nothing differs and everything checkable was
//!   checked.
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
}

impl Report {
    /// 0 all reproduced (or recorded); 1 something differs; 2 something
    /// could not be checked here (and nothing differs).
    pub fn exit_code(&self) -> u8 {
        if self.verdicts.iter().any(|v| v.outcome == Outcome::Differs) {
            1
        } else if self
            .verdicts
            .iter()
            .any(|v| v.outcome == Outcome::CannotCheck)
        {
            2
        } else {
            0
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
            "exitCode": self.exit_code(),
        })
    }

    pub fn to_text(&self) -> String {
        let mut text = format!(
            "Receipt of loop {} ({}).\nSignature: {}\nTree: {} ({})\n",
            self.loop_id,
            self.status,
            self.signature,
            self.tree.as_deref().unwrap_or("none"),
            self.tree_source
        );
        for verdict in &self.verdicts {
            let word = match verdict.outcome {
                Outcome::Reproduced => "reproduced",
                Outcome::Differs => "DIFFERS",
                Outcome::CannotCheck => "cannot be checked here",
                Outcome::Recorded => "recorded",
            };
            text.push_str(&format!(
                "- {}: {word} — {}\n",
                verdict.name, verdict.detail
            ));
        }
        let summary = match self.exit_code() {
            0 => "Everything reproduced.",
            1 => "Something differs from the receipt.",
            _ => "Some conditions could not be checked here.",
        };
        text.push_str(summary);
        text
    }
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
/// signature must hold. The receipt and how it was signed; an error when it
/// is refused.
pub fn load(text: &str, allowed_signers: Option<&Path>) -> Result<(Receipt, String), String> {
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
    Ok((statement::parse(&statement)?, signature))
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

/// The receipt's tree checked out detached in a temp worktree; removed
/// (and the worktree list pruned) when dropped.
struct Checkout {
    root: PathBuf,
    hashed: Option<Hashed>,
    dir: PathBuf,
    _temp: TempDir,
}

impl Checkout {
    fn git(&self) -> std::process::Command {
        match &self.hashed {
            Some(hashed) => hashed.store_git(&self.root),
            None => crate::util::git::command(&self.root),
        }
    }

    fn make(root: &Path, hashed: Option<Hashed>, tree: &str) -> anyhow::Result<Checkout> {
        let temp = TempDir::new("verify")?;
        let checkout = Checkout {
            root: root.to_path_buf(),
            hashed,
            dir: temp.path().join("tree"),
            _temp: temp,
        };
        let mut commit = checkout.git();
        commit
            .args([
                "commit-tree",
                tree,
                "-m",
                "ralph-hooks verify (no ref points here)",
            ])
            .env("GIT_AUTHOR_NAME", "ralph-hooks")
            .env("GIT_AUTHOR_EMAIL", "ralph-hooks@localhost")
            .env("GIT_AUTHOR_DATE", "@0 +0000")
            .env("GIT_COMMITTER_NAME", "ralph-hooks")
            .env("GIT_COMMITTER_EMAIL", "ralph-hooks@localhost")
            .env("GIT_COMMITTER_DATE", "@0 +0000");
        let output = tree::run(commit, "commit-tree")?;
        let commit = String::from_utf8_lossy(&output.stdout).trim().to_string();
        let mut add = checkout.git();
        add.args(["worktree", "add", "--quiet", "--detach"])
            .arg(&checkout.dir)
            .arg(&commit);
        tree::run(add, "worktree add")?;
        Ok(checkout)
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        let mut remove = self.git();
        remove
            .args(["worktree", "remove", "--force"])
            .arg(&self.dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let _ = remove.status();
        let mut prune = self.git();
        prune
            .args(["worktree", "prune"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let _ = prune.status();
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

/// Re-runs `receipt` in `root`'s repository (or its work as it is now,
/// less `receipt_files`: the receipt committed beside the work is not part
/// of the tree it describes). `diagnose` computes a diagnostics condition
/// in a checked-out project folder.
pub fn verify(
    root: &Path,
    receipt: &Receipt,
    receipt_files: &[String],
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
    };
    let Some(tree) = receipt.tree.clone() else {
        let why = format!(
            "the receipt names no tree ({})",
            receipt.tree_note.as_deref().unwrap_or("none was recorded")
        );
        report.tree_source = why.clone();
        report.verdicts = none_checkable(receipt, &why);
        return Ok(report);
    };
    let in_repo = tree::repository_prefix(root).is_some();
    let hashed = if in_repo && tree::has_tree(root, &tree) {
        report.tree_source = "from this repository's objects".into();
        None
    } else {
        let mut excluded = receipt.excluded.clone();
        excluded.extend(receipt_files.iter().cloned());
        let now = tree::of_work(root, &excluded)
            .with_context(|| format!("cannot hash the work in {}", root.display()))?;
        if now.tree != tree {
            let why = format!(
                "tree {tree} is not in this repository, and the work here is tree {}: fetch the commit that holds it, or verify where the work is",
                now.tree
            );
            report.tree_source = "not found here".into();
            report.verdicts = none_checkable(receipt, &why);
            return Ok(report);
        }
        report.tree_source = "the work here as it is now, which is that tree".into();
        // In a repository the objects are now in its store; outside one
        // they are in the scratch store, kept until the checkout is gone.
        now.scratch_git_dir.is_some().then_some(now)
    };
    let checkout = Checkout::make(root, hashed, &tree)?;
    let project = checkout.dir.join(&receipt.prefix);
    let timeout = Duration::from_secs(receipt.check_timeout_secs.max(1));
    for condition in &receipt.conditions {
        let verdict = match condition {
            Condition::Command { command, run } => match run {
                None => Verdict {
                    name: condition.name(),
                    outcome: Outcome::Recorded,
                    detail: "never run: the loop ended before a Stop checked it".into(),
                },
                Some(recorded) => {
                    let here = checks::run(&project, command, timeout, &Walls::None)
                        .with_context(|| format!("cannot run check `{command}`"))?;
                    compare_command(&condition.name(), recorded, &here)
                }
            },
            Condition::Promise { found } => promise_verdict(*found),
            Condition::Diagnostics(recorded) if recorded.after.is_none() => {
                compare_diagnostics(recorded, &Rerun::default())
            }
            Condition::Diagnostics(recorded) => match diagnose(&project, recorded) {
                Ok(here) => compare_diagnostics(recorded, &here),
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

//! The git tree of the work as it is, without touching the user's index or
//! stash: `git add -A` into a copy of the index (`GIT_INDEX_FILE` pointing
//! at a temporary file), then `git write-tree`. Untracked files that are not
//! ignored are in it; the state root is left out. Outside a git repository
//! the same is done with a scratch object store, so a project without git
//! has a tree id too (its objects live only as long as the scratch store).
//!
//! Git runs through [`crate::util::git`]: no configured program runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context as _, bail};

/// A folder under the system temp dir, removed when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(what: &str) -> anyhow::Result<TempDir> {
        let base = std::env::temp_dir();
        for attempt in 0..100u32 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let path = base.join(format!(
                "ralph-{what}-{}-{nanos}-{attempt}",
                std::process::id()
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(TempDir { path }),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(error) => {
                    return Err(error).with_context(|| {
                        format!("cannot create a temp folder in {}", base.display())
                    });
                }
            }
        }
        bail!("no free temp folder name in {}", base.display())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Where the objects of a tree are: the project's repository, or a scratch
/// store made for it (a project outside git).
#[derive(Debug)]
pub struct Hashed {
    pub tree: String,
    /// The project root relative to the work tree's top (`""`, `"sub/"`).
    pub prefix: String,
    /// The scratch object store, when the project is not in a repository:
    /// `git --git-dir` for the commands that use the tree's objects.
    pub scratch_git_dir: Option<PathBuf>,
    /// Holds the temporary index (and the scratch store) until dropped.
    _temp: TempDir,
}

impl Hashed {
    /// `git` over `root`'s work with the tree's object store: the
    /// project's repository, or the scratch store.
    pub fn git(&self, root: &Path) -> Command {
        let mut command = self.store_git(root);
        if self.scratch_git_dir.is_some() {
            command.arg("--work-tree").arg(root);
        }
        command
    }

    /// `git` for the tree's object store alone (commits, worktrees).
    pub fn store_git(&self, root: &Path) -> Command {
        let mut command = crate::util::git::command(root);
        if let Some(git_dir) = &self.scratch_git_dir {
            command.arg("--git-dir").arg(git_dir);
        }
        command
    }
}

/// Runs `command`, failing with its stderr when it fails.
pub fn run(mut command: Command, what: &str) -> anyhow::Result<Output> {
    let output = command
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("cannot run git ({what})"))?;
    if !output.status.success() {
        bail!(
            "git {what} failed: {}",
            crate::util::text::escape_controls(String::from_utf8_lossy(&output.stderr).trim())
        );
    }
    Ok(output)
}

fn stdout_line(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Whether `root` is inside a git work tree; its prefix if so.
pub fn repository_prefix(root: &Path) -> Option<String> {
    let mut command = crate::util::git::command(root);
    command.args(["rev-parse", "--is-inside-work-tree", "--show-prefix"]);
    let output = command.stdin(std::process::Stdio::null()).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines();
    (lines.next()? == "true").then(|| lines.next().unwrap_or("").to_string())
}

/// The tree of the work in `root` as it is now, `excluded` left out.
pub fn of_work(root: &Path, excluded: &[String]) -> anyhow::Result<Hashed> {
    let temp = TempDir::new("receipt-tree")?;
    let index = temp.path().join("index");
    let prefix = repository_prefix(root);
    let scratch_git_dir = match &prefix {
        Some(_) => {
            // Start from the user's index (its stat data saves hashing
            // every unchanged file); the copy is what changes.
            let mut command = crate::util::git::command(root);
            command.args(["rev-parse", "--path-format=absolute", "--git-path", "index"]);
            let user_index =
                PathBuf::from(stdout_line(&run(command, "rev-parse --git-path index")?));
            if user_index.is_file() {
                std::fs::copy(&user_index, &index).with_context(|| {
                    format!(
                        "cannot copy {} to {}",
                        user_index.display(),
                        index.display()
                    )
                })?;
            }
            None
        }
        None => {
            let git_dir = temp.path().join("objects.git");
            let mut command = crate::util::git::command(root);
            command.args(["init", "-q", "--bare"]).arg(&git_dir);
            run(command, "init (scratch store)")?;
            Some(git_dir)
        }
    };
    let hashed = Hashed {
        tree: String::new(),
        prefix: prefix.clone().unwrap_or_default(),
        scratch_git_dir,
        _temp: temp,
    };
    let mut add = hashed.git(root);
    add.env("GIT_INDEX_FILE", &index)
        .args(["add", "-A", "--"])
        .arg(if prefix.is_some() { ":/" } else { "." });
    run(add, "add -A (temporary index)")?;
    if !excluded.is_empty() {
        // Taken out of the index afterwards, not left out by an exclude
        // pathspec: git refuses one that names an ignored path (the state
        // root usually is), and `add` would keep what the index tracks (a
        // receipt committed with the work).
        let mut forget = hashed.git(root);
        forget
            .env("GIT_INDEX_FILE", &index)
            .args(["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--"])
            .args(excluded);
        run(forget, "rm --cached (temporary index)")?;
    }
    let mut write = hashed.git(root);
    write.env("GIT_INDEX_FILE", &index).arg("write-tree");
    let tree = stdout_line(&run(write, "write-tree")?);
    if tree.len() < 40 || !tree.chars().all(|c| c.is_ascii_hexdigit()) {
        bail!("git write-tree printed {tree:?}, not a tree id");
    }
    Ok(Hashed { tree, ..hashed })
}

/// Whether the tree object `tree` is in `root`'s repository.
pub fn has_tree(root: &Path, tree: &str) -> bool {
    let mut command = crate::util::git::command(root);
    command
        .args(["cat-file", "-e"])
        .arg(format!("{tree}^{{tree}}"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    command.status().is_ok_and(|status| status.success())
}

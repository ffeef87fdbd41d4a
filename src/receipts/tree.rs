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
            // Private: a checkout or a copy of the index holds the user's
            // files, which other local users must not read from /tmp.
            let mut builder = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&path) {
                Ok(()) => {
                    if let Ok(mut live) = LIVE_TEMP_DIRS.lock() {
                        live.push(path.clone());
                    }
                    return Ok(TempDir { path });
                }
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

/// Every [`TempDir`] of this process not yet dropped, for
/// [`remove_live_temp_dirs`].
static LIVE_TEMP_DIRS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Removes every temp folder of this process now: for a process a signal
/// is about to end, where no `Drop` will run.
pub fn remove_live_temp_dirs() {
    let live = LIVE_TEMP_DIRS
        .lock()
        .map(|mut live| std::mem::take(&mut *live))
        .unwrap_or_default();
    for path in live {
        let _ = remove_tree(&path);
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Ok(mut live) = LIVE_TEMP_DIRS.lock() {
            live.retain(|path| *path != self.path);
        }
        if let Err(error) = remove_tree(&self.path) {
            eprintln!(
                "ralph-hooks: warning: cannot remove {}: {error}",
                crate::util::text::escape_controls(&self.path.to_string_lossy())
            );
        }
    }
}

/// Removes `path` and everything under it, first making read-only folders
/// writable (a check may leave a read-only module cache behind).
pub fn remove_tree(path: &Path) -> std::io::Result<()> {
    if path.symlink_metadata().is_err() {
        return Ok(());
    }
    if std::fs::remove_dir_all(path).is_ok() {
        return Ok(());
    }
    make_writable(path);
    std::fs::remove_dir_all(path)
}

fn make_writable(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(metadata) = path.symlink_metadata() else {
        return;
    };
    if !metadata.is_dir() {
        return;
    }
    let mut permissions = metadata.permissions();
    permissions.set_mode(permissions.mode() | 0o700);
    let _ = std::fs::set_permissions(path, permissions);
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            make_writable(&entry.path());
        }
    }
}

/// The ignore file the user's own `git add -A` reads besides the
/// repository's: `core.excludesFile` from the global config (`~/.gitconfig`
/// and its includes). Reading config runs nothing; the rest of the global
/// config stays off (see [`crate::util::git`]). `None` when none is set,
/// in which case git's default (`~/.config/git/ignore`) applies anyway.
pub fn global_excludes_file(root: &Path) -> Option<PathBuf> {
    let mut command = Command::new(crate::util::trusted::program("git", Some(root)));
    command
        .arg("-C")
        .arg(root)
        .args(["config", "--global", "--path", "--get", "core.excludesFile"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .env_remove("GIT_DIR")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let output = command.output().ok()?;
    let path = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

/// `git` over the project with the user's global ignore file applied, as
/// their own `git add -A` and `git status` would ignore.
fn with_user_excludes(mut command: Command, excludes: &Option<PathBuf>) -> Command {
    if let Some(file) = excludes {
        let mut setting = std::ffi::OsString::from("core.excludesFile=");
        setting.push(file);
        // After `-C` and the safe settings: a later `-c` wins.
        command.arg("-c").arg(setting);
    }
    command
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
    let excludes = prefix.as_ref().and_then(|_| global_excludes_file(root));
    let mut add = with_user_excludes(hashed.git(root), &excludes);
    // The project folder only: for a project inside a bigger repository
    // (a home folder under git, a monorepo) the rest stays as its index has
    // it, and untracked files outside the project (`~/.ssh`) never enter.
    add.env("GIT_INDEX_FILE", &index)
        .args(["add", "-A", "--", "."]);
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
            .args(excluded.iter().map(|path| format!(":(literal){path}")));
        run(forget, "rm --cached (temporary index)")?;
    }
    let mut write = hashed.git(root);
    write.env("GIT_INDEX_FILE", &index).arg("write-tree");
    let tree = stdout_line(&run(write, "write-tree")?);
    if tree.len() < 40 || !tree.chars().all(|c| c.is_ascii_hexdigit()) {
        bail!("git write-tree printed {tree:?}, not a tree id");
    }
    let folder = hashed.prefix.trim_end_matches('/');
    if !folder.is_empty() {
        // A project the enclosing repository ignores has no files in its
        // tree: that tree is not the project's work.
        let mut probe = hashed.git(root);
        probe
            .args(["cat-file", "-t"])
            .arg(format!("{tree}:{folder}"));
        let is_folder = probe
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .is_ok_and(|output| output.status.success() && output.stdout.trim_ascii() == b"tree");
        if !is_folder {
            bail!(
                "the project folder {folder} is not in the enclosing repository's tree (its .gitignore leaves it out)"
            );
        }
    }
    Ok(Hashed { tree, ..hashed })
}

/// Whether `text` is an object id as git writes one: 40 (SHA-1) or 64
/// (SHA-256) lower-case hex digits. Anything else (`HEAD^{tree}`, a branch
/// name) is a revision expression, which must never stand for a receipt's
/// tree.
pub fn is_object_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64)
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// Whether the tree object `tree` (an object id, see [`is_object_id`]) is
/// in `root`'s repository.
pub fn has_tree(root: &Path, tree: &str) -> bool {
    if !is_object_id(tree) {
        return false;
    }
    let mut command = crate::util::git::command(root);
    command
        .args(["cat-file", "-t"])
        .arg(tree)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    command
        .output()
        .is_ok_and(|output| output.status.success() && output.stdout.trim_ascii() == b"tree")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkout or an index copy under the shared temp dir holds the
    /// user's files: no other local user may read it.
    #[test]
    fn temp_dirs_are_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let temp = TempDir::new("mode-test").unwrap();
        let mode = std::fs::metadata(temp.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    }

    #[test]
    fn only_object_ids_are_trees() {
        assert!(is_object_id("4b825dc642cb6eb9a060e54bf8d69288fbee4904"));
        assert!(is_object_id(&"a".repeat(64)));
        for not in [
            "HEAD",
            "HEAD^{tree}",
            "main",
            "4B825DC642CB6EB9A060E54BF8D69288FBEE4904",
            "",
        ] {
            assert!(!is_object_id(not), "{not}");
        }
    }
}

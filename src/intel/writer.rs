//! The all-or-nothing write of several files (rename, rewrite, fix).
//!
//! 1. Every file is checked first: still the text the preview was computed
//!    from, inside the project (a symlink is followed to its target, which
//!    must be inside too; the link itself stays a link), not in the hook
//!    state. What each file is then (device, inode, size, modification
//!    time) is remembered.
//! 2. Each file's new text goes to a temp file beside it with the file's
//!    mode, owner and group, and right before that temp file is renamed
//!    over it the file is looked at again: if it changed or went away since
//!    step 1 (an editor, a formatter, a `git checkout` while we write),
//!    nothing more is written, the files already written get their old text
//!    back, and the error names the file that changed.
//! 3. If any write fails, the same rollback. A file changed by someone else
//!    after we wrote it is not rolled back over their change; the error
//!    says so.
//!
//! A file that is not the text its change was computed from is a [`Stale`]
//! error. [`compute_and_apply`] is how the commands write: it computes the
//! changes from the files as they are now, and when one changed before the
//! first write (a formatter, an editor, a Bash command, a server answering
//! from an older text) it computes them again from the new text, at most
//! [`ATTEMPTS`] times in all, then refuses, naming the files. A change seen
//! during the writes (step 2) is rolled back and refused, not retried.
//!
//! Tests inject a failure with `RALPH_HOOKS_FAIL_WRITE=<file name>`: the
//! write of the file with that name fails as a full disk would. With
//! `RALPH_HOOKS_PAUSE_BEFORE_WRITE=<path>` the command says so on stderr and
//! waits (at most 30 s) for `<path>` to exist before its checks (and removes
//! it, so each attempt of [`compute_and_apply`] waits), and with
//! `RALPH_HOOKS_PAUSE_BETWEEN_WRITES=<path>` it does the same after the
//! first file is written, so a test can change a file behind its back.

use std::fs::{self, File};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};

use crate::state::{create_temp, temp_beside};
use crate::util::fsread::{self, Links, limits};

/// The environment variable that makes one write fail, for tests.
pub const FAIL_WRITE_ENV: &str = "RALPH_HOOKS_FAIL_WRITE";
/// The environment variable that pauses before the checks, for tests.
pub const PAUSE_ENV: &str = "RALPH_HOOKS_PAUSE_BEFORE_WRITE";
/// The environment variable that pauses after the first write, for tests.
pub const PAUSE_BETWEEN_ENV: &str = "RALPH_HOOKS_PAUSE_BETWEEN_WRITES";

/// How many times the changes are computed before a command gives up on
/// files that keep changing under it.
pub const ATTEMPTS: usize = 3;

/// Files that are no longer the text their changes were computed from;
/// nothing was written (or everything written was restored).
#[derive(Debug, Clone, PartialEq)]
pub struct Stale {
    pub paths: Vec<PathBuf>,
    /// Why, after the list of files: "changed since the changes were
    /// computed".
    pub why: String,
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        write!(f, "{} {}", names.join(", "), self.why)
    }
}

impl std::error::Error for Stale {}

/// What a rollback did, on the error that caused it. A change seen while
/// the files were being written is not computed again: someone is writing
/// the project at this very moment, and our text has already been on disk.
#[derive(Debug)]
struct RolledBack(String);

impl std::fmt::Display for RolledBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The stale files of `error` when computing again can help: files
/// changed under us before anything was written.
pub fn stale_paths(error: &anyhow::Error) -> Option<&[PathBuf]> {
    if error.downcast_ref::<RolledBack>().is_some() {
        return None;
    }
    error.downcast_ref::<Stale>().map(|s| s.paths.as_slice())
}

/// Computes the changes and writes them (or only computes them, when
/// `write` is false), all or nothing. `compute` is given the files found
/// changed at the previous attempt (none at the first); when a file is not
/// the text its change was computed from — at the check before writing, or
/// as `compute` itself reports with a [`Stale`] error — everything is
/// computed again from the files as they are now, at most [`ATTEMPTS`]
/// times, each retry told to `note`. Then the command refuses: the error
/// names the files that kept changing, and nothing is written.
pub fn compute_and_apply(
    bounds: Bounds<'_>,
    write: bool,
    what: &str,
    mut compute: impl FnMut(&[PathBuf]) -> anyhow::Result<Vec<FileChange>>,
    mut note: impl FnMut(String),
) -> anyhow::Result<Vec<FileChange>> {
    let mut stale: Vec<PathBuf> = Vec::new();
    for attempt in 1..=ATTEMPTS {
        let outcome = compute(&stale).and_then(|changes| match write {
            true => apply_all(&changes, bounds).map(|()| changes),
            false => Ok(changes),
        });
        let error = match outcome {
            Ok(changes) => return Ok(changes),
            Err(error) => error,
        };
        let Some(paths) = stale_paths(&error) else {
            return Err(error);
        };
        if attempt == ATTEMPTS {
            return Err(error.context(format!(
                "the files kept changing while the {what} was computed ({ATTEMPTS} attempts); nothing written, run it again"
            )));
        }
        let names: Vec<String> = paths
            .iter()
            .map(|p| {
                p.strip_prefix(bounds.project)
                    .unwrap_or(p)
                    .display()
                    .to_string()
            })
            .collect();
        note(format!(
            "{} changed since the {what} was computed; computing it again from the current text (attempt {} of {ATTEMPTS})",
            names.join(", "),
            attempt + 1
        ));
        stale = paths.to_vec();
    }
    Err(anyhow!("no attempt was made"))
}

/// One file's change: the text it had when the change was computed, and
/// the text it gets.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    pub path: PathBuf,
    pub before: String,
    pub after: String,
}

/// Where writes may go: inside `project`, never inside `state`.
#[derive(Debug, Clone, Copy)]
pub struct Bounds<'a> {
    pub project: &'a Path,
    pub state: &'a Path,
}

/// What a file was when it was checked (or when we wrote it): any write by
/// someone else changes at least one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    device: u64,
    inode: u64,
    size: u64,
    modified_ns: i128,
}

impl Identity {
    fn of(metadata: &fs::Metadata) -> Identity {
        Identity {
            device: metadata.dev(),
            inode: metadata.ino(),
            size: metadata.size(),
            modified_ns: i128::from(metadata.mtime()) * 1_000_000_000
                + i128::from(metadata.mtime_nsec()),
        }
    }
}

/// A change ready to write: where the bytes really go, and what the file
/// must still be when they do.
struct Planned<'c> {
    change: &'c FileChange,
    /// The file itself, links resolved: a symlink stays a link and its
    /// target gets the new text.
    target: PathBuf,
    checked: Identity,
    mode: u32,
    owner: (u32, u32),
}

/// Writes every change or none (see the module doc). The error says what
/// failed and whether the rollback restored everything.
pub fn apply_all(changes: &[FileChange], bounds: Bounds<'_>) -> anyhow::Result<()> {
    let fail_on = std::env::var(FAIL_WRITE_ENV).ok();
    pause_for(PAUSE_ENV, "pausing before writing", true);
    apply_all_with(changes, bounds, |path, _index| {
        if let Some(name) = &fail_on
            && path
                .file_name()
                .is_some_and(|n| n.to_string_lossy() == *name)
        {
            bail!(
                "cannot write {}: injected failure ({FAIL_WRITE_ENV})",
                path.display()
            );
        }
        Ok(())
    })
}

/// Waits (at most 30 s) for the file named by `env` to exist, for tests;
/// `consume` removes it then, so that the next pause (a write computed
/// again) waits for the test too.
fn pause_for(env: &str, what: &str, consume: bool) {
    if let Some(go_on) = std::env::var_os(env) {
        eprintln!("ralph-hooks: {what} ({env})");
        let until = Instant::now() + Duration::from_secs(30);
        while !Path::new(&go_on).exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        if consume {
            let _ = fs::remove_file(&go_on);
        }
    }
}

/// [`apply_all`] with a check run before each file's write (its target and
/// its index among the files written), so tests can fail any write.
pub fn apply_all_with(
    changes: &[FileChange],
    bounds: Bounds<'_>,
    mut before_write: impl FnMut(&Path, usize) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let project = fs::canonicalize(bounds.project).unwrap_or_else(|_| bounds.project.into());
    let state = fs::canonicalize(bounds.state).unwrap_or_else(|_| bounds.state.into());
    let mut planned = Vec::new();
    let mut stale = Vec::new();
    let mut deleted = false;
    for change in changes.iter().filter(|c| c.before != c.after) {
        match plan(change, &project, &state)? {
            Some(ready) => planned.push(ready),
            None => {
                deleted |= fs::symlink_metadata(&change.path).is_err();
                stale.push(change.path.clone());
            }
        }
    }
    if !stale.is_empty() {
        let how = if deleted {
            "changed or went away"
        } else {
            "changed"
        };
        return Err(Stale {
            paths: stale,
            why: format!("{how} since the changes were computed"),
        }
        .into());
    }
    let mut written: Vec<(&Planned<'_>, Identity)> = Vec::new();
    for (index, plan) in planned.iter().enumerate() {
        if index == 1 {
            pause_for(PAUSE_BETWEEN_ENV, "pausing after the first write", false);
        }
        let result = before_write(&plan.target, index).and_then(|()| write_one(plan));
        match result {
            Ok(identity) => written.push((plan, identity)),
            Err(error) => return Err(roll_back(&written, error)),
        }
    }
    Ok(())
}

/// Checks one change before anything is written; `None` when the file is
/// no longer the text the change was computed from.
fn plan<'c>(
    change: &'c FileChange,
    project: &Path,
    state: &Path,
) -> anyhow::Result<Option<Planned<'c>>> {
    let path = &change.path;
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link
        && fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        // Deleted since the change was computed: computing again can tell.
        return Ok(None);
    }
    let target = fs::canonicalize(path).with_context(|| {
        if is_link {
            format!(
                "{} is a symlink to a file that does not exist; nothing written",
                path.display()
            )
        } else {
            format!("cannot find {}; nothing written", path.display())
        }
    })?;
    if target.starts_with(state) {
        bail!(
            "refusing to write {}: it is in the hook state ({}); nothing written",
            path.display(),
            state.display()
        );
    }
    if !target.starts_with(project) {
        if is_link {
            bail!(
                "refusing to write {}: it is a symlink to {}, outside the project; nothing written",
                path.display(),
                target.display()
            );
        }
        bail!(
            "refusing to write {}: it is outside the project ({}); nothing written",
            path.display(),
            target.display()
        );
    }
    let Some((now, metadata)) = read_with_metadata(&target)? else {
        return Ok(None);
    };
    if now != change.before {
        return Ok(None);
    }
    Ok(Some(Planned {
        change,
        target,
        checked: Identity::of(&metadata),
        mode: metadata.permissions().mode() & 0o7777,
        owner: (metadata.uid(), metadata.gid()),
    }))
}

/// The file's text and what the file was while it was read (taken from
/// the open descriptor after the read: a write during it shows there).
fn read_with_metadata(path: &Path) -> anyhow::Result<Option<(String, fs::Metadata)>> {
    let Some((file, _)) = fsread::open_regular(path, Links::Follow)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    (&file)
        .take(limits::SOURCE + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > limits::SOURCE {
        bail!(
            "{} is larger than {} MiB; not written",
            path.display(),
            limits::SOURCE / (1024 * 1024)
        );
    }
    let metadata = file
        .metadata()
        .with_context(|| format!("cannot inspect {}", path.display()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text; not written", path.display()))?;
    Ok(Some((text, metadata)))
}

/// Writes one planned change: temp file with the file's mode and owner,
/// the file looked at again, the rename. What the file is after our write.
fn write_one(plan: &Planned<'_>) -> anyhow::Result<Identity> {
    replace(
        &plan.target,
        plan.change.after.as_bytes(),
        plan.mode,
        plan.owner,
        |target| {
            let changed = |why: &str| Stale {
                paths: vec![plan.change.path.clone()],
                why: why.into(),
            };
            match fs::symlink_metadata(target) {
                // Same identity and same text: an edit that kept the size
                // within one tick of the file system's clock shows only in
                // the text.
                Ok(metadata)
                    if Identity::of(&metadata) == plan.checked
                        && read_with_metadata(target)
                            .ok()
                            .flatten()
                            .is_some_and(|(text, _)| text == plan.change.before) =>
                {
                    Ok(())
                }
                Ok(_) => Err(changed(
                    "changed while the changes were being written (someone else wrote it)",
                )
                .into()),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    Err(changed("was deleted while the changes were being written").into())
                }
                Err(error) => {
                    Err(error).with_context(|| format!("cannot inspect {}", target.display()))
                }
            }
        },
    )
}

/// Replaces `target` with `bytes` atomically: a new temp file in the same
/// folder (rename works within one filesystem) with `mode` and `owner`,
/// synced; `still_ours` is asked right before the rename.
fn replace(
    target: &Path,
    bytes: &[u8],
    mode: u32,
    owner: (u32, u32),
    still_ours: impl Fn(&Path) -> anyhow::Result<()>,
) -> anyhow::Result<Identity> {
    let dir = target.parent().context("a file to write has no folder")?;
    let temp = temp_beside(target)?;
    let result = (|| {
        let mut file = create_temp(&temp, 0o600)?;
        file.write_all(bytes)
            .with_context(|| format!("cannot write {}", temp.display()))?;
        keep_owner(&file, owner, target)?;
        file.set_permissions(fs::Permissions::from_mode(mode))
            .with_context(|| format!("cannot set the mode of {}", temp.display()))?;
        file.sync_all()
            .with_context(|| format!("cannot sync {}", temp.display()))?;
        still_ours(target)?;
        fs::rename(&temp, target)
            .with_context(|| format!("cannot rename {} to {}", temp.display(), target.display()))?;
        fs::symlink_metadata(target)
            .map(|m| Identity::of(&m))
            .with_context(|| format!("cannot inspect {}", target.display()))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    // The rename is durable only once the folder entry is.
    if let Ok(folder) = File::open(dir) {
        let _ = folder.sync_all();
    }
    result
}

/// Gives the temp file the owner and group of the file it replaces. Only
/// root can give a file away; anyone can keep their own, and a member can
/// set one of their groups, which covers files a user may write.
fn keep_owner(file: &File, (uid, gid): (u32, u32), target: &Path) -> anyhow::Result<()> {
    let metadata = file.metadata()?;
    if metadata.uid() == uid && metadata.gid() == gid {
        return Ok(());
    }
    std::os::unix::fs::fchown(file, Some(uid), Some(gid)).with_context(|| {
        format!(
            "cannot keep the owner and group of {} (uid {uid}, gid {gid}): writing it would hand it to you",
            target.display()
        )
    })
}

/// Puts back the files already written (newest first) and wraps `error`
/// with what the rollback did.
fn roll_back(written: &[(&Planned<'_>, Identity)], error: anyhow::Error) -> anyhow::Error {
    let mut not_restored = Vec::new();
    for (plan, ours) in written.iter().rev() {
        let restored = replace(
            &plan.target,
            plan.change.before.as_bytes(),
            plan.mode,
            plan.owner,
            |target| match fs::symlink_metadata(target) {
                Ok(metadata) if Identity::of(&metadata) == *ours => Ok(()),
                _ => bail!("it changed after it was written; left as it is now"),
            },
        );
        if let Err(restore_error) = restored {
            not_restored.push(format!(
                "{} ({restore_error:#})",
                plan.change.path.display()
            ));
        }
    }
    if not_restored.is_empty() {
        return error.context(RolledBack(format!(
            "nothing changed: {} file(s) already written were restored",
            written.len()
        )));
    }
    error.context(RolledBack(format!(
        "the rollback failed for {}",
        not_restored.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ralph-writer-{label}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn change(dir: &Path, name: &str, before: &str, after: &str) -> FileChange {
        let path = dir.join(name);
        fs::write(&path, before).unwrap();
        FileChange {
            path,
            before: before.into(),
            after: after.into(),
        }
    }

    fn bounds(dir: &Path) -> (PathBuf, PathBuf) {
        (dir.to_path_buf(), dir.join("state"))
    }

    #[test]
    fn a_failed_write_restores_the_files_already_written() {
        let dir = temp_dir("rollback");
        let (project, state) = bounds(&dir);
        let bounds = Bounds {
            project: &project,
            state: &state,
        };
        let changes = vec![
            change(&dir, "a.ts", "a1", "a2"),
            change(&dir, "b.ts", "b1", "b2"),
            change(&dir, "c.ts", "c1", "c2"),
        ];
        let error = apply_all_with(&changes, bounds, |path, _| {
            if path.ends_with("c.ts") {
                bail!("disk full");
            }
            Ok(())
        })
        .unwrap_err();
        assert!(format!("{error:#}").contains("2 file(s) already written were restored"));
        for (name, text) in [("a.ts", "a1"), ("b.ts", "b1"), ("c.ts", "c1")] {
            assert_eq!(fs::read_to_string(dir.join(name)).unwrap(), text);
        }
        apply_all(&changes, bounds).unwrap();
        assert_eq!(fs::read_to_string(dir.join("c.ts")).unwrap(), "c2");
    }

    #[test]
    fn a_file_changed_since_the_preview_or_in_the_state_is_not_written() {
        let dir = temp_dir("stale");
        let (project, state) = bounds(&dir);
        let bounds = Bounds {
            project: &project,
            state: &state,
        };
        let stale = change(&dir, "a.py", "old", "new");
        fs::write(&stale.path, "edited meanwhile").unwrap();
        let error = apply_all(std::slice::from_ref(&stale), bounds).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("changed since the changes were computed")
        );
        fs::create_dir(dir.join("state")).unwrap();
        let inside = change(&dir.join("state"), "loop.json", "{}", "{\"x\":1}");
        let error = apply_all(&[inside], bounds).unwrap_err();
        assert!(error.to_string().contains("hook state"));
    }

    #[test]
    fn a_file_changed_or_deleted_during_the_writes_stops_them_all() {
        for deleted in [false, true] {
            let dir = temp_dir(if deleted { "deleted" } else { "edited" });
            let (project, state) = bounds(&dir);
            let bounds = Bounds {
                project: &project,
                state: &state,
            };
            let changes = vec![
                change(&dir, "a.js", "a1", "a2"),
                change(&dir, "b.js", "b1", "b2"),
                change(&dir, "c.js", "c1", "c2"),
            ];
            let error = apply_all_with(&changes, bounds, |_, index| {
                // After a.js is written, someone edits (or deletes) c.js.
                if index == 1 {
                    if deleted {
                        fs::remove_file(dir.join("c.js")).unwrap();
                    } else {
                        fs::write(dir.join("c.js"), "c1 and an edit").unwrap();
                    }
                }
                Ok(())
            })
            .unwrap_err();
            let message = format!("{error:#}");
            assert!(message.contains("c.js"), "{message}");
            assert!(
                message.contains("2 file(s) already written were restored"),
                "{message}"
            );
            assert_eq!(fs::read_to_string(dir.join("a.js")).unwrap(), "a1");
            assert_eq!(fs::read_to_string(dir.join("b.js")).unwrap(), "b1");
            if deleted {
                assert!(!dir.join("c.js").exists(), "a deleted file stays deleted");
            } else {
                assert_eq!(
                    fs::read_to_string(dir.join("c.js")).unwrap(),
                    "c1 and an edit"
                );
            }
        }
    }

    #[test]
    fn links_are_kept_and_links_out_of_the_project_refused() {
        let dir = temp_dir("links");
        let project = dir.join("project");
        fs::create_dir_all(&project).unwrap();
        let state = project.join("state");
        let bounds = Bounds {
            project: &project,
            state: &state,
        };
        fs::write(project.join("real.py"), "x = 1\n").unwrap();
        fs::set_permissions(project.join("real.py"), fs::Permissions::from_mode(0o640)).unwrap();
        std::os::unix::fs::symlink("real.py", project.join("link.py")).unwrap();
        let through = FileChange {
            path: project.join("link.py"),
            before: "x = 1\n".into(),
            after: "y = 1\n".into(),
        };
        apply_all(&[through], bounds).unwrap();
        assert!(
            fs::symlink_metadata(project.join("link.py"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            fs::read_to_string(project.join("real.py")).unwrap(),
            "y = 1\n"
        );
        let mode = fs::metadata(project.join("real.py"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640, "the mode is kept");

        fs::write(dir.join("outside.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink(dir.join("outside.py"), project.join("out.py")).unwrap();
        let out = FileChange {
            path: project.join("out.py"),
            before: "x = 1\n".into(),
            after: "y = 1\n".into(),
        };
        let error = apply_all(&[out], bounds).unwrap_err();
        assert!(
            format!("{error:#}").contains("outside the project"),
            "{error:#}"
        );
        assert_eq!(
            fs::read_to_string(dir.join("outside.py")).unwrap(),
            "x = 1\n"
        );
        assert!(
            fs::symlink_metadata(project.join("out.py"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}

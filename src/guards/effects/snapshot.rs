//! Snapshots of the protected set for the check after a Bash command: per
//! file its `lstat` signature and content id, with a copy of the bytes kept
//! (content-addressed, bounded) so a changed file can be put back.
//!
//! A file whose signature (size, inode, mtime, ctime, mode) is what the
//! last snapshot saw is not read again: `ctime` cannot be set back by a
//! process, so an unchanged signature means unchanged content. Only a
//! changed file is read, hashed and copied.
//!
//! A mode change alone (`chmod 0444`, `chmod 000`: from an ordinary user
//! it makes the hooks' own reads and writes fail, every hook then failing
//! open) is put back too ([`restore_modes`]), and the state root's folders
//! get their owner's bits back ([`repair_dir_modes`]). Ownership is not
//! restored: only root can give a file away, and root ignores modes.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Change;
use crate::state::journal::content_id;

/// A copy is kept of files up to this size…
pub const MAX_KEPT_FILE: u64 = 4 * 1024 * 1024;
/// …while all copies together stay under this.
pub const MAX_KEPT_TOTAL: u64 = 64 * 1024 * 1024;
/// The part of an append-only log compared to see that it only grew.
const LOG_TAIL: u64 = 4096;

/// What the check after a command expects of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Under the state root: changes only through ralph-hooks (the journal).
    State,
    /// An append-only log under the state root: it may only grow.
    Log,
    /// Config and settings: no Bash command of the agent may change it.
    Config,
}

/// A file's `lstat` signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sig {
    pub len: u64,
    pub ino: u64,
    pub dev: u64,
    pub mode: u32,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Sig {
    fn of(metadata: &std::fs::Metadata) -> Sig {
        Sig {
            len: metadata.len(),
            ino: metadata.ino(),
            dev: metadata.dev(),
            mode: metadata.mode(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }

    pub fn is_link(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }

    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    pub class: Class,
    /// `None`: the file does not exist.
    pub sig: Option<Sig>,
    /// The content id, or `link:<target>` for a symlink, or `dir`.
    pub content: Option<String>,
    /// A copy of the bytes is in the blob folder.
    #[serde(default)]
    pub kept: bool,
    /// Logs: the content id of the last bytes up to `sig.len`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<String>,
}

impl FileState {
    pub fn absent(class: Class) -> FileState {
        FileState {
            class,
            sig: None,
            content: None,
            kept: false,
            tail: None,
        }
    }

    pub fn exists(&self) -> bool {
        self.sig.is_some()
    }

    /// Same content (or both absent). An empty regular file counts as no
    /// file: Claude Code's sandbox (bubblewrap) creates one on the host for
    /// each absent path it masks and removes it afterwards (attack finding
    /// F9: those were reported as the agent's tampering and moved aside),
    /// and every reader of ours takes an empty file as absent, so creating
    /// or removing one changes nothing the guard protects.
    pub fn same_as(&self, other: &FileState) -> bool {
        (self.content == other.content && self.exists() == other.exists())
            || (self.void() && other.void())
    }

    /// Absent, or an empty regular file.
    // The casts are needed where `mode_t` is not `u32` (macOS).
    #[allow(clippy::unnecessary_cast)]
    fn void(&self) -> bool {
        self.sig.as_ref().is_none_or(|sig| {
            sig.len == 0 && sig.mode & (libc::S_IFMT as u32) == libc::S_IFREG as u32
        })
    }
}

/// The protected set at one moment, by absolute path.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    pub taken_ms: u64,
    pub files: BTreeMap<String, FileState>,
}

/// The content-addressed copies.
pub struct Blobs {
    dir: PathBuf,
    used: Option<u64>,
}

impl Blobs {
    pub fn new(dir: PathBuf) -> Blobs {
        Blobs { dir, used: None }
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }

    pub fn get(&self, id: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(id)).ok()
    }

    fn has(&self, id: &str) -> bool {
        self.path(id).is_file()
    }

    fn used(&mut self) -> u64 {
        if let Some(used) = self.used {
            return used;
        }
        let used = std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0);
        self.used = Some(used);
        used
    }

    /// Keeps a copy unless it is there already or the budget is spent.
    fn put(&mut self, id: &str, bytes: &[u8]) -> bool {
        if self.has(id) {
            return true;
        }
        if bytes.len() as u64 > MAX_KEPT_FILE || self.used() + bytes.len() as u64 > MAX_KEPT_TOTAL {
            return false;
        }
        if std::fs::create_dir_all(&self.dir).is_err() {
            return false;
        }
        let temp = self.dir.join(format!(".{id}.tmp-{}", std::process::id()));
        let written =
            std::fs::write(&temp, bytes).and_then(|()| std::fs::rename(&temp, self.path(id)));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
            return false;
        }
        self.used = Some(self.used() + bytes.len() as u64);
        true
    }

    /// Removes the copies no manifest names any more.
    pub fn collect_garbage(&self, live: &[&Manifest]) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let referenced = live.iter().any(|manifest| {
                manifest
                    .files
                    .values()
                    .any(|file| file.kept && file.content.as_deref() == Some(name.as_str()))
            });
            if !referenced {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Takes the state of each path: unchanged signatures reuse `base`'s
/// reading, others are read (a copy kept when it fits).
pub fn take(
    paths: &[(PathBuf, Class)],
    base: Option<&Manifest>,
    blobs: &mut Blobs,
    now_ms: u64,
) -> Manifest {
    let mut files = BTreeMap::new();
    for (path, class) in paths {
        let key = path.to_string_lossy().into_owned();
        let previous = base.and_then(|base| base.files.get(&key));
        files.insert(key, read_state(path, *class, previous, blobs));
    }
    Manifest {
        taken_ms: now_ms,
        files,
    }
}

fn read_state(
    path: &Path,
    class: Class,
    previous: Option<&FileState>,
    blobs: &mut Blobs,
) -> FileState {
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return FileState::absent(class);
    };
    let sig = Sig::of(&metadata);
    if let Some(previous) = previous
        && previous.sig.as_ref() == Some(&sig)
        && previous.class == class
        && (!previous.kept || previous.content.as_deref().is_some_and(|id| blobs.has(id)))
    {
        return previous.clone();
    }
    if sig.is_dir() {
        return FileState {
            class,
            sig: Some(sig),
            content: Some("dir".into()),
            kept: false,
            tail: None,
        };
    }
    if sig.is_link() {
        let target = std::fs::read_link(path)
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        return FileState {
            class,
            sig: Some(sig),
            content: Some(format!("link:{target}")),
            kept: false,
            tail: None,
        };
    }
    if !metadata.is_file() {
        return FileState {
            class,
            sig: Some(sig),
            content: Some("special".into()),
            kept: false,
            tail: None,
        };
    }
    let Ok(bytes) = std::fs::read(path) else {
        return FileState {
            class,
            sig: Some(sig),
            content: Some("unreadable".into()),
            kept: false,
            tail: None,
        };
    };
    let id = content_id(&bytes);
    let kept = blobs.put(&id, &bytes);
    let tail = (class == Class::Log).then(|| {
        let from = bytes.len().saturating_sub(LOG_TAIL as usize);
        content_id(&bytes[from..])
    });
    FileState {
        class,
        sig: Some(sig),
        content: Some(id),
        kept,
        tail,
    }
}

/// Whether a log only grew since `before`: the bytes that ended it then
/// still end the same prefix now.
pub fn only_appended(path: &Path, before: &FileState, now: &FileState) -> bool {
    let (Some(before_sig), Some(now_sig)) = (&before.sig, &now.sig) else {
        return !before.exists();
    };
    if now_sig.len < before_sig.len {
        return false;
    }
    let Some(tail) = &before.tail else {
        return false;
    };
    let from = before_sig.len.saturating_sub(LOG_TAIL);
    let Ok(bytes) = read_range(path, from, before_sig.len) else {
        return false;
    };
    &content_id(&bytes) == tail
}

fn read_range(path: &Path, from: u64, to: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = vec![0; (to - from) as usize];
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// The permission bits of each file `before` saw, put back where they
/// changed (whatever happened to the content, which is checked next).
pub fn restore_modes(before: &Manifest) -> Vec<Change> {
    use std::os::unix::fs::PermissionsExt;
    let mut changes = Vec::new();
    for (key, was) in &before.files {
        let Some(was_sig) = &was.sig else {
            continue;
        };
        let Ok(metadata) = std::fs::symlink_metadata(key) else {
            continue;
        };
        let mode = was_sig.mode & 0o7777;
        if was_sig.is_link()
            || was_sig.is_dir()
            || !metadata.is_file()
            || metadata.mode() & 0o7777 == mode
        {
            continue;
        }
        let restored = std::fs::set_permissions(key, std::fs::Permissions::from_mode(mode))
            .map_err(|error| format!("cannot set its mode back to {mode:04o}: {error}"));
        changes.push(Change {
            path: key.clone(),
            what: "mode changed",
            restored,
            note: None,
        });
    }
    changes
}

/// The state root and the folders in it (one level: `.locks`, `tasks`,
/// `loops`, …) that are ours but lost their owner's read, write or search
/// bit get it back: every lock and state write of the hooks needs them.
pub fn repair_dir_modes(state_root: &Path) -> Vec<Change> {
    use std::os::unix::fs::PermissionsExt;
    let uid = unsafe { libc::geteuid() };
    let mut dirs = vec![state_root.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(state_root) {
        dirs.extend(entries.filter_map(|e| e.ok()).map(|e| e.path()));
    }
    let mut changes = Vec::new();
    for dir in dirs {
        let Ok(metadata) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        let mode = metadata.mode() & 0o7777;
        if !metadata.is_dir() || metadata.uid() != uid || mode & 0o700 == 0o700 {
            continue;
        }
        let fixed = mode | 0o700;
        let restored = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(fixed))
            .map_err(|error| format!("cannot set its mode back to {fixed:04o}: {error}"));
        changes.push(Change {
            path: dir.to_string_lossy().into_owned(),
            what: "mode changed",
            restored,
            note: None,
        });
    }
    changes
}

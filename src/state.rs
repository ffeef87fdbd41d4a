//! All disk state under the state root goes through this module.
//!
//! - Reads of a single file need no lock: writers replace files with an atomic
//!   rename, so a reader sees the old file or the new one, never a torn one.
//! - A read-modify-write takes the file's exclusive lock first ([`Store::lock`]);
//!   only the [`Locked`] guard can save, so the types enforce the order.
//! - Every JSON file carries a `version`; one we cannot parse is moved aside
//!   to `<name>.corrupt-<UTC timestamp>`, reported, and treated as absent.
//! - A regular file that is invalid but changed less than [`QUIET`] ago is
//!   "not yet", never damaged: an editor saving in place truncates and then
//!   writes. Readers look again until it is valid or has been quiet that
//!   long; only then is it moved aside. A store that leaves damage in place
//!   (the monitor's read-only scan) reports it and never moves anything.
//! - Nothing is created on disk until something is written, so a hook that
//!   finds no state leaves none behind.
//!
//! Also here: [`ids`], which checks every id from input before it becomes a
//! path, [`events_log`], the append-only `events.jsonl`, and [`journal`],
//! where each write of ours is recorded while the guard watches the state
//! root (so its check after a Bash command can tell ours from others'). This is the
//! lowest layer that knows about the system: it uses only [`crate::util`],
//! and everything else uses it.

pub mod dedicated;
pub mod events_log;
mod fsio;
pub mod ids;
pub mod journal;
mod kept;
mod lock;

use std::cell::{Cell, OnceCell, RefCell};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use fsio::{create_temp, temp_beside, write_atomic, write_atomic_mode};
pub use lock::FileLock;

/// How long an invalid regular file must stay unchanged before it counts as
/// damaged. Editors that save in place leave a file empty or half-written
/// for 10–50 ms; a second is far beyond that and still short for a reader
/// to wait once.
pub const QUIET: Duration = Duration::from_secs(1);

/// How often a file that is being written is looked at again.
const SETTLE_POLL: Duration = Duration::from_millis(20);

/// A JSON document we own. `VERSION` is written into the file and checked on
/// every load, so a newer ralph-hooks' file is refused, not misread.
pub trait Versioned: Serialize + DeserializeOwned {
    const VERSION: u64;
    /// Whether this kind of document keeps a second copy (`.<name>.kept`,
    /// see the `kept` module).
    const KEEPS_COPY: bool = false;
    /// Whether this document, as saved, is worth that copy.
    fn worth_a_copy(&self) -> bool {
        false
    }
}

/// The state root, plus the warnings its reads produced (corrupt files moved
/// aside), which the hook runner shows to the user.
pub struct Store {
    root: PathBuf,
    warnings: RefCell<Vec<String>>,
    /// The guard's watch folder for this root ([`journal`]), found once.
    watch: OnceCell<Option<PathBuf>>,
    /// Damaged files are reported and left where they are (the monitor).
    leave_damage: Cell<bool>,
}

/// One look at a state file, after waiting for a write in progress.
enum Look<T> {
    Absent,
    Valid(T),
    Newer(u64),
    Invalid(String),
}

/// What happened to a damaged file.
enum Aside {
    Moved,
    /// Changed within [`QUIET`]: somebody is writing it.
    NotYet,
    /// This store leaves damage in place.
    LeftInPlace,
}

/// Whether `path` is a regular file changed less than [`QUIET`] ago (or
/// stamped in the future): invalid content there may be a write in progress.
pub fn being_written(path: &Path) -> bool {
    let Ok(metadata) = path.symlink_metadata() else {
        return false;
    };
    if !metadata.is_file() {
        return false;
    }
    let Ok(modified) = metadata.modified() else {
        return false;
    };
    match SystemTime::now().duration_since(modified) {
        Ok(age) => age < QUIET,
        Err(_) => true,
    }
}

impl Store {
    pub fn new(root: PathBuf) -> Store {
        Store {
            root,
            warnings: RefCell::new(Vec::new()),
            watch: OnceCell::new(),
            leave_damage: Cell::new(false),
        }
    }

    /// From now on, damaged files are reported and left in place, and
    /// reads never wait for a write in progress: a read-only scan (the
    /// monitor) must never move a file a person or a hook is writing.
    pub fn leave_damage_in_place(&self) {
        self.leave_damage.set(true);
    }

    /// Reads `path` through `check`. Invalid content of a regular file
    /// that is still changing is read again until it is valid or has been
    /// quiet for [`QUIET`] (at most that long in all).
    fn look<T>(
        &self,
        path: &Path,
        check: &dyn Fn(&str) -> Result<T, Decode>,
    ) -> anyhow::Result<Look<T>> {
        let started = Instant::now();
        loop {
            let reason = match fsio::read_state(path)? {
                Ok(None) => return Ok(Look::Absent),
                Ok(Some(text)) => match check(&text) {
                    Ok(value) => return Ok(Look::Valid(value)),
                    Err(Decode::Newer(version)) => return Ok(Look::Newer(version)),
                    Err(Decode::Corrupt(reason)) => reason,
                },
                Err(reason) => reason,
            };
            if self.leave_damage.get() || started.elapsed() >= QUIET || !being_written(path) {
                return Ok(Look::Invalid(reason));
            }
            std::thread::sleep(SETTLE_POLL);
        }
    }

    /// Records a write of ours in the guard's journal while it watches
    /// this root (a `stat` otherwise). Called before the write lands.
    fn journal(&self, path: &Path, bytes: Option<&[u8]>) {
        let watch = self
            .watch
            .get_or_init(|| journal::watch_dir(&self.root))
            .as_deref();
        if let Ok(relative) = path.strip_prefix(&self.root) {
            journal::record(watch, &relative.to_string_lossy(), bytes);
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Makes git ignore the whole state root, with a `.gitignore` inside it
    /// (the project's own `.gitignore` stays untouched): locks, logs and
    /// loop state are never project files, and a `git add -A` must not
    /// commit them. Creates the root if needed; true when the file was new.
    pub fn ignore_in_git(&self) -> anyhow::Result<bool> {
        let path = self.root.join(".gitignore");
        if path.exists() {
            return Ok(false);
        }
        // A `*` there would hide every file of a folder that is not ours
        // (RALPH_HOOKS_STATE_DIR pointed at a shared folder or a repository).
        if let Some(reason) = dedicated::not_ours(&self.root) {
            bail!(
                "not making git ignore {}: {reason}; point RALPH_HOOKS_STATE_DIR at a folder of its own",
                self.root.display()
            );
        }
        std::fs::create_dir_all(&self.root)
            .with_context(|| format!("cannot create {}", self.root.display()))?;
        let text = b"# ralph-hooks' own state (locks, logs, loop state): not project files.\n*\n";
        self.journal(&path, Some(text));
        write_atomic(&path, text)?;
        Ok(true)
    }

    /// The path of `relative` under the root. `relative` is one of our fixed
    /// names, or built from ids checked by [`crate::state::ids`].
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// [`Store::path`], refused when a directory on its way leaves the root
    /// through a symlink: for files written or removed without a lock
    /// (each with a fresh name of its own, such as a queued notification).
    pub fn confined_path(&self, relative: &str) -> anyhow::Result<PathBuf> {
        let path = self.path(relative);
        self.confined(&path)?;
        Ok(path)
    }

    /// Whether `relative` is there, or its kept copy is: the
    /// next read puts the document back from it.
    pub fn exists(&self, relative: &str) -> bool {
        let path = self.path(relative);
        path.exists() || kept::path_for(&path).exists()
    }

    /// A document of a kind that keeps a copy, found missing or damaged
    /// (`what`; already moved aside) under its lock: put back from the copy
    /// when the copy is valid and worth keeping, and said.
    fn restore_kept<T: Versioned>(&self, path: &Path, what: &str) -> anyhow::Result<Option<T>> {
        if !T::KEEPS_COPY || self.leave_damage.get() {
            return Ok(None);
        }
        let copy = kept::path_for(path);
        let Ok(Ok(Some(text))) = fsio::read_state(&copy) else {
            return Ok(None);
        };
        let Ok(value) = decode::<T>(&text) else {
            return Ok(None);
        };
        if !value.worth_a_copy() {
            return Ok(None);
        }
        self.confined(path)?;
        self.journal(path, Some(text.as_bytes()));
        kept::put_back(path, &copy, &text).with_context(|| {
            format!("cannot put {} back from {}", path.display(), copy.display())
        })?;
        self.warn(format!(
            "{} was {what} while it mattered; put back from the copy ralph-hooks keeps ({})",
            path.display(),
            copy.display()
        ));
        Ok(Some(value))
    }

    /// Warnings collected so far (corrupt files moved aside), emptied.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut self.warnings.borrow_mut())
    }

    fn warn(&self, message: String) {
        eprintln!("ralph-hooks: warning: {message}");
        self.warnings.borrow_mut().push(message);
    }

    /// Reads a JSON document without locking. Missing means `None`; corrupt
    /// (unparsable, not UTF-8, not a regular file, a link, too large) means
    /// moved aside and `None`.
    pub fn read_json<T: Versioned>(&self, relative: &str) -> anyhow::Result<Option<T>> {
        let path = self.path(relative);
        match self.look(&path, &decode::<T>)? {
            Look::Absent
                if T::KEEPS_COPY && !self.leave_damage.get() && kept::path_for(&path).exists() =>
            {
                if lock::held_here(&self.lock_path(relative)) {
                    return self.restore_kept::<T>(&path, "removed");
                }
                self.lock(relative)?.load_json::<T>()
            }
            Look::Absent => Ok(None),
            Look::Valid(value) => Ok(Some(value)),
            Look::Newer(version) => Err(newer::<T>(&path, version)),
            Look::Invalid(reason) => {
                self.recover(relative, &reason, &|locked| locked.load_json::<T>())
            }
        }
    }

    /// A damaged read without the lock: re-checked under the lock (another
    /// process may have fixed or already moved the file), or, when this
    /// thread already holds that lock, moved aside under the held one. A
    /// file still being written, or a store that leaves damage in place,
    /// reads as absent this time.
    fn recover<T>(
        &self,
        relative: &str,
        reason: &str,
        again: &dyn Fn(&Locked<'_>) -> anyhow::Result<Option<T>>,
    ) -> anyhow::Result<Option<T>> {
        let path = self.path(relative);
        if self.leave_damage.get() || being_written(&path) {
            self.move_aside_held(&path, reason)?;
            return Ok(None);
        }
        if lock::held_here(&self.lock_path(relative)) {
            self.move_aside_held(&path, reason)?;
            return Ok(None);
        }
        again(&self.lock(relative)?)
    }

    /// Reads a text file without locking; missing means `None`, and a file
    /// that is not UTF-8 text (or not a regular file) is moved aside and `None`.
    pub fn read_text(&self, relative: &str) -> anyhow::Result<Option<String>> {
        self.read_text_where(relative, |_| None)
    }

    /// [`Store::read_text`] for text with a shape of its own: `damaged`
    /// says why a text is not what the file must hold (a task file without
    /// a `Status`), and such a file is treated like unreadable text.
    pub fn read_text_where(
        &self,
        relative: &str,
        damaged: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Option<String>> {
        let check = |text: &str| match damaged(text) {
            Some(reason) => Err(Decode::Corrupt(reason)),
            None => Ok(text.to_string()),
        };
        match self.look(&self.path(relative), &check)? {
            Look::Absent => Ok(None),
            Look::Valid(text) => Ok(Some(text)),
            Look::Newer(_) => unreachable!("text is never of a newer version"),
            Look::Invalid(reason) => self.recover(relative, &reason, &|locked| {
                locked.load_text_where(&damaged)
            }),
        }
    }

    /// Moves `relative` aside as corrupt (see [`Locked::move_aside`]), under
    /// its lock: the one this thread holds, or one taken for it.
    pub fn move_aside(&self, relative: &str, reason: &str) -> anyhow::Result<()> {
        if lock::held_here(&self.lock_path(relative)) {
            return self.move_aside_held(&self.path(relative), reason).map(drop);
        }
        if self.leave_damage.get() {
            return self.move_aside_held(&self.path(relative), reason).map(drop);
        }
        let locked = self.lock(relative)?;
        if locked.path.symlink_metadata().is_ok() {
            // Not moved while being written: the caller reads it as absent.
            self.move_aside_held(&locked.path, reason)?;
        }
        Ok(())
    }

    fn lock_path(&self, relative: &str) -> PathBuf {
        self.root
            .join(".locks")
            .join(format!("{}.lock", relative.replace('/', "%")))
    }

    /// Refuses `path` when a directory on its way leaves the state root
    /// through a symlink: state writes stay inside the root.
    fn confined(&self, path: &Path) -> anyhow::Result<()> {
        fsio::check_confined(&self.root, path)
    }

    /// Takes the exclusive lock for a read-modify-write of `relative`.
    pub fn lock(&self, relative: &str) -> anyhow::Result<Locked<'_>> {
        let lock_path = self.lock_path(relative);
        self.confined(&lock_path)?;
        let lock = FileLock::acquire(&lock_path)?;
        if let Some(repaired) = lock.repaired() {
            self.warnings.borrow_mut().push(repaired.to_string());
        }
        Ok(Locked {
            store: self,
            path: self.path(relative),
            _lock: lock,
        })
    }

    /// Appends one line to a log file under its lock; the offset where the
    /// line starts.
    pub fn append_line(&self, relative: &str, line: &str) -> anyhow::Result<u64> {
        let locked = self.lock(relative)?;
        self.confined(&locked.path)?;
        match fsio::append_line(&locked.path, line)? {
            fsio::Appended::Done(offset) => Ok(offset),
            // A link or FIFO there is not ours: move it aside, start afresh.
            fsio::Appended::Refused(reason) => {
                locked.move_aside(reason)?;
                match fsio::append_line(&locked.path, line)? {
                    fsio::Appended::Done(offset) => Ok(offset),
                    fsio::Appended::Refused(reason) => {
                        bail!("cannot append to {}: {reason}", locked.path.display())
                    }
                }
            }
        }
    }

    /// Removes temp files left by writers that were killed mid-write
    /// (`.<name>.tmp-<pid>-<nanos>` whose pid is gone), in the root and its
    /// direct subdirectories. Best effort: returns how many were removed.
    pub fn sweep_stale_temps(&self) -> usize {
        let mut removed = 0;
        let mut dirs = vec![self.root.clone()];
        if let Ok(entries) = std::fs::read_dir(&self.root) {
            dirs.extend(
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.is_dir()),
            );
        }
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.filter_map(|e| e.ok()) {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(writer_pid) = fsio::temp_writer_pid(&name) else {
                    continue;
                };
                if !crate::util::process::is_alive(writer_pid)
                    && std::fs::remove_file(entry.path()).is_ok()
                {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// Lists the file names in a directory under the root (empty when missing).
    pub fn list_dir(&self, relative: &str) -> anyhow::Result<Vec<String>> {
        let dir = self.path(relative);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => {
                return Err(error).with_context(|| format!("cannot list {}", dir.display()));
            }
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }
}

/// Proof that the lock of one file is held; the only way to save it.
pub struct Locked<'s> {
    store: &'s Store,
    path: PathBuf,
    _lock: FileLock,
}

impl Locked<'_> {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Loads the document; a corrupt one is moved aside and reported. One
    /// that is still being written (see [`QUIET`]) is an error, not absent:
    /// the caller is about to write, and must not replace what another
    /// program is saving.
    pub fn load_json<T: Versioned>(&self) -> anyhow::Result<Option<T>> {
        match self.store.look(&self.path, &decode::<T>)? {
            Look::Absent => self.store.restore_kept(&self.path, "removed"),
            Look::Valid(value) => Ok(Some(value)),
            Look::Newer(version) => Err(newer::<T>(&self.path, version)),
            Look::Invalid(reason) => match self.damaged::<T>(&reason)? {
                Some(value) => Ok(Some(value)),
                None => self
                    .store
                    .restore_kept(&self.path, &format!("damaged ({reason})")),
            },
        }
    }

    /// A damaged file under the lock: moved aside (`None`), or an error
    /// when it cannot be (being written, or this store leaves damage).
    fn damaged<T>(&self, reason: &str) -> anyhow::Result<Option<T>> {
        match self.store.move_aside_held(&self.path, reason)? {
            Aside::Moved => Ok(None),
            Aside::NotYet => bail!(
                "{} is being written by another program ({reason}, changed less than {} s ago); try again in a moment",
                self.path.display(),
                QUIET.as_secs()
            ),
            Aside::LeftInPlace => bail!("{} is damaged ({reason})", self.path.display()),
        }
    }

    /// Writes the document atomically, stamping its `version`.
    pub fn save_json<T: Versioned>(&self, value: &T) -> anyhow::Result<()> {
        let mut json = serde_json::to_value(value)
            .with_context(|| format!("cannot encode {}", self.path.display()))?;
        if let Some(object) = json.as_object_mut() {
            object.insert("version".into(), T::VERSION.into());
        }
        let mut text = serde_json::to_string_pretty(&json)
            .with_context(|| format!("cannot encode {}", self.path.display()))?;
        text.push('\n');
        self.store.confined(&self.path)?;
        self.store.journal(&self.path, Some(text.as_bytes()));
        write_atomic(&self.path, text.as_bytes())?;
        if T::KEEPS_COPY {
            self.save_copy(value.worth_a_copy().then_some(text.as_bytes()));
        }
        Ok(())
    }

    /// Writes (or removes) the kept copy ([`kept`]). A copy that cannot be
    /// written is said and leaves the older one: the document itself was
    /// saved.
    fn save_copy(&self, bytes: Option<&[u8]>) {
        let copy = kept::path_for(&self.path);
        self.store.journal(&copy, bytes);
        let result = match bytes {
            Some(bytes) => write_atomic(&copy, bytes),
            None => match std::fs::remove_file(&copy) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error.into()),
                _ => Ok(()),
            },
        };
        if let Err(error) = result {
            eprintln!(
                "ralph-hooks: note: cannot keep the copy {}: {error:#}",
                copy.display()
            );
        }
    }

    /// The text of the file; one that is not UTF-8 text is moved aside.
    pub fn load_text(&self) -> anyhow::Result<Option<String>> {
        self.load_text_where(|_| None)
    }

    /// [`Locked::load_text`] with the file's own shape checked (see
    /// [`Store::read_text_where`]).
    pub fn load_text_where(
        &self,
        damaged: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Option<String>> {
        let check = |text: &str| match damaged(text) {
            Some(reason) => Err(Decode::Corrupt(reason)),
            None => Ok(text.to_string()),
        };
        match self.store.look(&self.path, &check)? {
            Look::Absent => Ok(None),
            Look::Valid(text) => Ok(Some(text)),
            Look::Newer(_) => unreachable!("text is never of a newer version"),
            Look::Invalid(reason) => self.damaged(&reason),
        }
    }

    pub fn save_text(&self, text: &str) -> anyhow::Result<()> {
        self.store.confined(&self.path)?;
        self.store.journal(&self.path, Some(text.as_bytes()));
        write_atomic(&self.path, text.as_bytes())
    }

    /// Writes bytes as they are: the guard putting back a file's copy.
    pub fn save_bytes(&self, bytes: &[u8]) -> anyhow::Result<()> {
        self.store.confined(&self.path)?;
        self.store.journal(&self.path, Some(bytes));
        write_atomic(&self.path, bytes)
    }

    pub fn remove(&self) -> anyhow::Result<()> {
        if kept::path_for(&self.path).exists() {
            self.save_copy(None);
        }
        self.store.journal(&self.path, None);
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => {
                Err(error).with_context(|| format!("cannot remove {}", self.path.display()))
            }
        }
    }

    /// Renames the file to `<name>.corrupt-<UTC timestamp>` and reports it
    /// (see [`Locked::load_text_where`] for what is not moved).
    pub fn move_aside(&self, reason: &str) -> anyhow::Result<()> {
        self.damaged::<()>(reason).map(drop)
    }
}

impl Store {
    /// The move itself; the caller holds the file's lock. Works for any
    /// kind of entry (a FIFO, a directory, a link: the link itself moves).
    /// A regular file changed within [`QUIET`] is not moved: somebody is
    /// writing it. A store that leaves damage in place only reports.
    fn move_aside_held(&self, path: &Path, reason: &str) -> anyhow::Result<Aside> {
        if self.leave_damage.get() {
            let message = format!("{} is damaged ({reason}); left in place", path.display());
            if !self.warnings.borrow().contains(&message) {
                self.warnings.borrow_mut().push(message);
            }
            return Ok(Aside::LeftInPlace);
        }
        if being_written(path) {
            eprintln!(
                "ralph-hooks: note: {} is not valid yet ({reason}) but changed less than {} s ago: another program is writing it; read as absent this time",
                path.display(),
                QUIET.as_secs()
            );
            return Ok(Aside::NotYet);
        }
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let aside = path.with_file_name(format!("{file_name}.corrupt-{stamp}"));
        self.journal(path, None);
        std::fs::rename(path, &aside).with_context(|| {
            format!(
                "cannot move corrupt {} aside to {}",
                path.display(),
                aside.display()
            )
        })?;
        self.warn(format!(
            "{} was corrupt ({reason}); moved it to {} and carried on without it",
            path.display(),
            aside.display()
        ));
        Ok(Aside::Moved)
    }
}

fn newer<T: Versioned>(path: &Path, version: u64) -> anyhow::Error {
    anyhow::anyhow!(
        "{} has version {version}, newer than this ralph-hooks understands ({}): upgrade ralph-hooks",
        path.display(),
        T::VERSION
    )
}

enum Decode {
    Corrupt(String),
    Newer(u64),
}

fn decode<T: Versioned>(text: &str) -> Result<T, Decode> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|error| Decode::Corrupt(error.to_string()))?;
    let version = value
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| Decode::Corrupt("no numeric version field".into()))?;
    if version > T::VERSION {
        return Err(Decode::Newer(version));
    }
    serde_json::from_value(value).map_err(|error| Decode::Corrupt(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Doc {
        n: u32,
    }
    impl Versioned for Doc {
        const VERSION: u64 = 1;
    }

    fn temp_store() -> (PathBuf, Store) {
        let dir = std::env::temp_dir().join(format!(
            "ralph-state-test-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        (dir.clone(), Store::new(dir))
    }

    fn rand_suffix() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    }

    #[test]
    fn missing_reads_as_none_and_creates_nothing() {
        let (dir, store) = temp_store();
        assert!(store.read_json::<Doc>("a.json").unwrap().is_none());
        assert!(!dir.exists());
    }

    #[test]
    fn save_then_load_round_trips_with_version() {
        let (dir, store) = temp_store();
        store
            .lock("a.json")
            .unwrap()
            .save_json(&Doc { n: 7 })
            .unwrap();
        let text = std::fs::read_to_string(dir.join("a.json")).unwrap();
        assert!(text.contains("\"version\": 1"), "{text}");
        assert_eq!(
            store.read_json::<Doc>("a.json").unwrap(),
            Some(Doc { n: 7 })
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn corrupt_is_moved_aside_and_reported() {
        let (dir, store) = temp_store();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.json"), "{not json").unwrap();
        assert!(store.read_json::<Doc>("a.json").unwrap().is_none());
        assert!(!dir.join("a.json").exists());
        let names = store.list_dir("").unwrap();
        assert!(
            names.iter().any(|n| n.starts_with("a.json.corrupt-")),
            "{names:?}"
        );
        assert_eq!(store.take_warnings().len(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn stale_temps_of_dead_writers_are_swept() {
        let (dir, store) = temp_store();
        std::fs::create_dir_all(dir.join("loops")).unwrap();
        let dead = dir.join(".loop.json.tmp-999999999-12");
        let alive = dir
            .join("loops")
            .join(format!(".x.json.tmp-{}-34", std::process::id()));
        std::fs::write(&dead, "partial").unwrap();
        std::fs::write(&alive, "in progress").unwrap();
        assert_eq!(store.sweep_stale_temps(), 1);
        assert!(!dead.exists() && alive.exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn newer_version_is_refused_not_moved() {
        let (dir, store) = temp_store();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.json"), r#"{"version": 9, "n": 1}"#).unwrap();
        let error = store.read_json::<Doc>("a.json").unwrap_err();
        assert!(format!("{error:#}").contains("newer"), "{error:#}");
        assert!(dir.join("a.json").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}

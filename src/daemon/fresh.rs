//! What a warm server's workspace looks like on the disk, and what changed
//! there since the server last looked: the daemon's side of "every answer is
//! computed from the files as they are now".
//!
//! A server reads the files it has not been given (every file but the open
//! documents) from the disk, once, and keeps what it read. Nothing tells it
//! when a shell command, a script, `git checkout` or another program changes
//! them later, so before each job the worker walks the server's workspace
//! root ([`DiskView::refresh`]) and compares every source file's stamp with
//! the one the last walk saw; what moved is told to the server
//! (`workspace/didChangeWatchedFiles`, open documents re-sent or closed, see
//! `worker`), and a changed configuration file restarts the server.
//!
//! A stamp is the file's size, inode, modification and status-change times
//! (nanoseconds): an editor or `sed -i` that writes a new file and renames
//! it in changes the inode, an in-place write changes the times. Two writes
//! of the same size within one tick of the file system's clock leave equal
//! times, so a file whose times are close to the walk that saw it is
//! *racy* (as git calls it): its content hash is kept and compared at the
//! next walk, whatever its stamp says.
//!
//! The walk is the project check's (hidden files, `node_modules/`,
//! `target/`, `.git/`, virtual environments and the hooks' state root
//! skipped), except that git-ignored files are walked too: generated code,
//! protocol stubs and `_version.py` files are routinely git-ignored and
//! imported, and a cold server reads them; restricted to the server's file extensions and the
//! configuration files below. Folders behind symbolic links are not entered,
//! but a symbolic link to a source file is one: a server reading it reads
//! its target, so its stamp is the target's (stat through the link, which
//! sees a target outside the project edited) plus the link's own text
//! (`ln -sfn` pointing it elsewhere); a dangling link is a deleted file.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::engine::files::NEVER;
use crate::lsp::Launch;
use crate::lsp::environment::PythonSearch;
use crate::util::text::fnv1a;

/// Files whose change changes a server's answers for every file (the
/// checkers' and build systems' configuration): a change restarts the
/// server, which reads them again from scratch. `tsconfig*.json` are
/// matched by prefix too (`tsconfig.base.json`).
pub const CONFIG_FILES: &[&str] = &[
    "pyproject.toml",
    "pyrightconfig.json",
    "setup.cfg",
    "ty.toml",
    "pyrefly.toml",
    "mypy.ini",
    "ruff.toml",
    ".ruff.toml",
    "tsconfig.json",
    "jsconfig.json",
    "package.json",
    "Cargo.toml",
    "go.mod",
    "go.work",
    "compile_commands.json",
    "compile_flags.txt",
    ".clangd",
];

/// Hidden configuration files: the walk skips hidden files, so these are
/// looked at directly in the root.
const HIDDEN_CONFIG_FILES: &[&str] = &[
    ".ruff.toml",
    ".clangd",
    // Which Python a version manager's shim runs here (re-attack RC-1).
    ".python-version",
    ".tool-versions",
];

/// How many paths the changes of one walk may have, with the names they
/// get through folder links inside the root (a bound, whatever the links).
const MAX_ALIASES: usize = 10_000;

/// How close to the walk a file's times must be for the walk to be unsure
/// it saw the file's final content (a coarse file-system clock ticks every
/// few milliseconds; some file systems keep whole seconds).
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// What identifies a file's content without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    ino: u64,
    dev: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    /// For a symbolic link, a hash of where it points (0 for a file).
    link: u64,
}

impl Stamp {
    fn of(metadata: &std::fs::Metadata) -> Stamp {
        Stamp {
            len: metadata.len(),
            ino: metadata.ino(),
            dev: metadata.dev(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
            link: 0,
        }
    }

    /// The stamp of the file a symbolic link at `path` points to, with
    /// where it points; `None` when it does not lead to a regular file.
    fn through_link(path: &Path) -> Option<Stamp> {
        let target = std::fs::read_link(path).ok()?;
        let metadata = std::fs::metadata(path).ok()?;
        if !metadata.is_file() {
            return None;
        }
        let mut stamp = Stamp::of(&metadata);
        // Never 0, so a link is never mistaken for a file.
        stamp.link = fnv1a(target.as_os_str().as_encoded_bytes()) | 1;
        Some(stamp)
    }

    /// The stamp of a folder, which counts only by being there: what it
    /// holds is walked on its own. Its times are left out (every file
    /// created in it moves them), so it is never racy.
    fn folder() -> Stamp {
        Stamp {
            len: 0,
            ino: 0,
            dev: 0,
            mtime: (0, 0),
            ctime: (0, 0),
            // Even and not 0: neither a file's nor a link's.
            link: 2,
        }
    }

    /// The later of its modification and status-change times.
    fn latest(&self) -> SystemTime {
        let at = |(secs, nanos): (i64, i64)| {
            UNIX_EPOCH
                + Duration::from_secs(secs.max(0) as u64)
                + Duration::from_nanos(nanos.max(0) as u64)
        };
        at(self.mtime).max(at(self.ctime))
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    stamp: Stamp,
    /// The content's hash, kept while the stamp is too close to a walk to
    /// tell two versions apart.
    racy_hash: Option<u64>,
}

/// What changed on the disk since the last walk. Paths are absolute, under
/// the canonical root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskChanges {
    pub created: Vec<PathBuf>,
    pub changed: Vec<PathBuf>,
    pub deleted: Vec<PathBuf>,
    /// Configuration files created, changed or deleted.
    pub configs: Vec<PathBuf>,
    /// C and C++ files (headers, textual includes, sources) created, changed or deleted — by anyone, the
    /// job's own edit too (filled in by the worker, see [`c_files`]).
    pub c_files: Vec<PathBuf>,
    /// Importable folders (Python's namespace packages) among `created`
    /// and `deleted` that came or went with no file of the server's in
    /// them, and whose name an import line of the project names: pyright
    /// takes in such a folder only below a regular package (one with an
    /// `__init__.py`), told or not (engine attack E-9); the others (an
    /// `out/` or `logs/` a script made) are told only (re-attack RC-4:
    /// each restarted it, a cold check).
    pub bare_folders: Vec<PathBuf>,
}

/// Extensions of C and C++ files a translation unit may include: headers,
/// textual includes (`.inc`, `.inl`, `.def` X-macro lists, `.tcc`), and
/// sources (a unity build includes `.c` files).
const C_FAMILY: &[&str] = &[
    "h", "hh", "hpp", "hxx", "h++", "inc", "inl", "ipp", "tpp", "tcc", "def", "c", "cc", "cpp",
    "cxx", "c++",
];

/// Whether a server of `extensions` checks C or C++.
fn checks_c(extensions: &[String]) -> bool {
    extensions.iter().any(|ext| {
        matches!(
            ext.trim_start_matches('.'),
            "c" | "cc" | "cpp" | "cxx" | "c++"
        )
    })
}

/// A C/C++ translation unit's own extension (what a post-edit check
/// checks by itself).
pub fn is_c_source(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| {
            matches!(
                ext.to_ascii_lowercase().as_str(),
                "c" | "cc" | "cpp" | "cxx" | "c++"
            )
        })
}

fn is_c_family(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| C_FAMILY.contains(&ext.to_ascii_lowercase().as_str()))
}

/// The C/C++ files among `paths`, for a server of `extensions` that checks
/// C or C++. Such a server answers for a file from a preamble built from
/// the files it included: clangd, told of a changed header (or sent its
/// new text), went on answering for the files that include it from the old
/// preamble (engine attack E-13: a false "no problems", a loop completed
/// over an `#error`; re-attack RE-3/RE-4: an included `.c`, `.inc`, `.inl`).
/// Only a fresh server is sure to read them.
pub fn c_files(extensions: &[String], paths: &[&PathBuf]) -> Vec<PathBuf> {
    if !checks_c(extensions) {
        return Vec::new();
    }
    paths
        .iter()
        .filter(|path| is_c_family(path))
        .map(|path| (*path).clone())
        .collect()
}

impl DiskChanges {
    pub fn is_empty(&self) -> bool {
        self.created.is_empty()
            && self.changed.is_empty()
            && self.deleted.is_empty()
            && self.configs.is_empty()
    }

    /// The first `n` paths, relative to `root`, and how many more.
    pub fn examples(&self, root: &Path, n: usize) -> String {
        let all: Vec<&PathBuf> = self
            .changed
            .iter()
            .chain(&self.created)
            .chain(&self.deleted)
            .chain(&self.configs)
            .collect();
        let mut text: Vec<String> = all
            .iter()
            .take(n)
            .map(|path| {
                crate::util::text::escape_controls(
                    &path.strip_prefix(root).unwrap_or(path).to_string_lossy(),
                )
                .into_owned()
            })
            .collect();
        if all.len() > n {
            text.push(format!("{} more", all.len() - n));
        }
        text.join(", ")
    }

    /// "2 changed, 1 created, 1 deleted" for the daemon's log.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = [
            (self.changed.len(), "changed"),
            (self.created.len(), "created"),
            (self.deleted.len(), "deleted"),
            (self.configs.len(), "configuration file(s) changed"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        parts.join(", ")
    }
}

/// The stamps of a server's files as the last walk saw them.
#[derive(Debug)]
pub struct DiskView {
    root: PathBuf,
    /// Lower-case extensions with their dot (`.py`).
    extensions: Vec<String>,
    /// Folders never walked besides [`NEVER`] (the hooks' state root).
    skip: Vec<PathBuf>,
    files: HashMap<PathBuf, Entry>,
    configs: HashMap<PathBuf, Entry>,
    /// Files outside the walk the server reads (see `deps`), stamped with
    /// the configuration files; found again when the configuration or
    /// the set of JSON files changes.
    deps: Vec<PathBuf>,
    /// The JSON files of the last walk (for a server of scripts only).
    json_files: Vec<PathBuf>,
    /// Whether a walk has set the baseline.
    walked: bool,
    /// The settings and initialization options the daemon hands the
    /// server, as JSON: paths named there are read too (see `deps`).
    settings: String,
    /// Where the server looks for modules besides the project: the
    /// virtual environment it runs in, `PYTHONPATH`.
    python_search: PythonSearch,
}

impl DiskView {
    /// A view of `root` for a server of `extensions`, never looking into
    /// `skip`. Nothing is walked until [`DiskView::refresh`].
    pub fn new(root: &Path, extensions: &[String], skip: &[PathBuf]) -> DiskView {
        DiskView {
            root: root.canonicalize().unwrap_or_else(|_| root.to_path_buf()),
            extensions: extensions.iter().map(|e| e.to_lowercase()).collect(),
            skip: skip
                .iter()
                .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
                .collect(),
            files: HashMap::new(),
            configs: HashMap::new(),
            deps: Vec::new(),
            json_files: Vec::new(),
            walked: false,
            settings: String::new(),
            python_search: PythonSearch::default(),
        }
    }

    /// This view for the server `launch` starts: a search path named in
    /// its settings or initialization options is a dependency like one
    /// named in a configuration file, and so are the packages of the
    /// virtual environment it runs in.
    pub fn for_launch(mut self, launch: &Launch) -> Self {
        self.python_search = crate::lsp::environment::python_search(&launch.env);
        self.settings = [
            launch.settings.as_ref(),
            launch.initialization_options.as_ref(),
        ]
        .into_iter()
        .flatten()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
        self
    }

    /// Forgets everything: the next refresh sets a new baseline (a server
    /// that starts reads the disk as it is).
    pub fn reset(&mut self) {
        self.files.clear();
        self.configs.clear();
        self.deps.clear();
        self.json_files.clear();
        self.walked = false;
    }

    /// The C/C++ files among `paths` when this is a C/C++ server's view
    /// (see [`c_files`]).
    pub fn c_files(&self, paths: &[&PathBuf]) -> Vec<PathBuf> {
        c_files(&self.extensions, paths)
    }

    /// How many source files the last walk saw.
    pub fn len(&self) -> usize {
        self.files
            .values()
            .filter(|entry| entry.stamp != Stamp::folder())
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Walks the root and returns what changed since the last walk (nothing
    /// the first time: that walk is the baseline).
    pub fn refresh(&mut self) -> DiskChanges {
        let walk_started = SystemTime::now();
        let mut files = HashMap::with_capacity(self.files.len());
        let mut configs = HashMap::new();
        let skip = self.skip.clone();
        let scripts = crate::engine::deps::reads_scripts(&self.extensions);
        let mut json_files = Vec::new();
        let walker = ignore::WalkBuilder::new(&self.root)
            .require_git(false)
            // Ignored by git is not unread by the server (see above).
            .git_ignore(false)
            .git_exclude(false)
            .git_global(false)
            .follow_links(false)
            .filter_entry(move |entry| {
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                if !is_dir {
                    return true;
                }
                let name = entry.file_name().to_string_lossy();
                !(NEVER.contains(&name.as_ref()) || skip.iter().any(|s| entry.path() == s))
            })
            .build();
        let mut linked_folders = Vec::new();
        let python = self.extensions.iter().any(|e| e == ".py" || e == ".pyi");
        for entry in walker.flatten() {
            let is_link = entry.file_type().is_some_and(|t| t.is_symlink());
            // A folder that could be imported is a Python module in its own
            // right (a namespace package, PEP 420), with no file of its
            // own: its coming or going changes what an import resolves to
            // (engine attack E-9).
            if python
                && entry.depth() > 0
                && entry.file_type().is_some_and(|t| t.is_dir())
                && crate::engine::deps::is_python_identifier(&entry.file_name().to_string_lossy())
            {
                files.insert(
                    entry.into_path(),
                    Entry {
                        stamp: Stamp::folder(),
                        racy_hash: None,
                    },
                );
                continue;
            }
            if !is_link && !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            if is_link && std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
                linked_folders.push(entry.into_path());
                continue;
            }
            let name = entry.file_name().to_string_lossy();
            let is_config = is_config_name(&name);
            if !is_config && !self.handles(&name) {
                if scripts && name.ends_with(".json") {
                    json_files.push(entry.into_path());
                }
                continue;
            }
            let stamp = if is_link {
                Stamp::through_link(entry.path())
            } else {
                entry.metadata().ok().map(|metadata| Stamp::of(&metadata))
            };
            let Some(stamp) = stamp else {
                continue;
            };
            let target = if is_config { &mut configs } else { &mut files };
            target.insert(
                entry.into_path(),
                Entry {
                    stamp,
                    racy_hash: None,
                },
            );
        }
        let linked_parents = self.walk_linked_folders(&linked_folders, &mut files);
        // A folder link pointed elsewhere (`ln -sfn v2 shared`) is a
        // configuration change: tsserver keeps a file by its real path and
        // read the old target's again, told or not (re-attack RE-9).
        for link in &linked_folders {
            if let (Ok(target), Ok(metadata)) = (std::fs::read_link(link), link.symlink_metadata())
            {
                let mut stamp = Stamp::of(&metadata);
                stamp.link = fnv1a(target.as_os_str().as_encoded_bytes()) | 1;
                configs.insert(
                    link.clone(),
                    Entry {
                        stamp,
                        racy_hash: None,
                    },
                );
            }
        }
        for name in HIDDEN_CONFIG_FILES {
            let path = self.root.join(name);
            if let Ok(metadata) = std::fs::symlink_metadata(&path)
                && metadata.is_file()
            {
                configs.insert(
                    path,
                    Entry {
                        stamp: Stamp::of(&metadata),
                        racy_hash: None,
                    },
                );
            }
        }
        // A Python checker also reads configuration above the project and
        // the user's own: a change there restarts its server too
        // (re-attack RE-7: ty kept a user-level rule it had read at start).
        if self.extensions.iter().any(|e| e == ".py" || e == ".pyi") {
            for path in crate::engine::deps::python_configs_outside(&self.root) {
                stamp_into(&mut configs, &path);
            }
        }
        // The folders of a folder linked in from outside, for a Python
        // checker: one made or removed there (a namespace package, a
        // module) moves its parent's times, and is news (re-attack RC-5).
        if python {
            for folder in &linked_parents {
                stamp_into(&mut configs, folder);
            }
        }
        let walked_configs: Vec<PathBuf> = configs.keys().cloned().collect();
        for path in &self.deps {
            stamp_into(&mut configs, path);
        }
        let mut changes = DiskChanges::default();
        let first = !self.walked;
        diff(
            &self.files,
            &mut files,
            walk_started,
            first,
            &mut |path, how| match how {
                How::Created => changes.created.push(path),
                How::Changed => changes.changed.push(path),
                How::Deleted => changes.deleted.push(path),
            },
        );
        diff(
            &self.configs,
            &mut configs,
            walk_started,
            first,
            &mut |path, _| changes.configs.push(path),
        );
        changes.bare_folders =
            named_in_imports(&files, bare_folders(&files, &self.files, &changes));
        self.name_through_inner_links(&linked_folders, &mut changes);
        json_files.sort();
        if first || !changes.configs.is_empty() || json_files != self.json_files {
            // Found again from the configuration as it is now; a new
            // dependency is news unless this walk is the baseline.
            let deps = crate::engine::deps::dependencies(
                &self.root,
                &self.extensions,
                &walked_configs,
                &json_files,
                &self.settings,
                &self.python_search,
            );
            for gone in self.deps.iter().filter(|path| !deps.contains(path)) {
                if !walked_configs.contains(gone) {
                    configs.remove(gone);
                }
            }
            for path in &deps {
                if !configs.contains_key(path) && stamp_into(&mut configs, path) && !first {
                    changes.configs.push(path.clone());
                }
            }
            self.deps = deps;
            self.json_files = json_files;
        }
        self.files = files;
        self.configs = configs;
        self.walked = true;
        for list in [
            &mut changes.created,
            &mut changes.changed,
            &mut changes.deleted,
            &mut changes.configs,
        ] {
            list.sort();
        }
        changes
    }

    /// The source files under folder links that lead out of the root
    /// (`lib -> ../common/lib`, a vendored checkout linked in), stamped
    /// under the link's path, which is the path the server reads them by
    /// (engine attack E-1: an edit there was never seen warm). A link to a
    /// folder inside the root is walked as that folder already. At most
    /// [`MAX_LINKED_FILES`] files, over every link.
    /// Returns the real folders those files are in, and the links' targets.
    fn walk_linked_folders(
        &self,
        links: &[PathBuf],
        files: &mut HashMap<PathBuf, Entry>,
    ) -> std::collections::BTreeSet<PathBuf> {
        let wanted = |name: &str| self.handles(name);
        let mut parents: std::collections::BTreeSet<PathBuf> = links
            .iter()
            .filter_map(|link| link.canonicalize().ok())
            .filter(|target| !target.starts_with(&self.root) && !self.root.starts_with(target))
            .collect();
        for (named, real) in crate::engine::deps::files_under_links(&self.root, links, &wanted) {
            // Every folder up to the link's target (whose own entries are
            // in the set): one that holds only folders counts too
            // (re-attack RD-4).
            for folder in real.ancestors().skip(1) {
                if !parents.insert(folder.to_path_buf()) {
                    break;
                }
            }
            let is_link = real
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink());
            let stamp = if is_link {
                Stamp::through_link(&real)
            } else {
                std::fs::metadata(&real)
                    .ok()
                    .map(|metadata| Stamp::of(&metadata))
            };
            if let Some(stamp) = stamp {
                files.insert(
                    named,
                    Entry {
                        stamp,
                        racy_hash: None,
                    },
                );
            }
        }
        parents
    }

    /// Each created, changed or deleted file under the target of a folder
    /// link that stays inside the root (`pkg -> real`) named through the
    /// link too: the walk sees `real/m.py` only, but a server that reads
    /// it as `pkg/m.py` (an import through the link, or a rename that
    /// opened it there) keeps that path's old text unless told of it
    /// (engine attack E-20).
    fn name_through_inner_links(&self, links: &[PathBuf], changes: &mut DiskChanges) {
        // A link into a folder that holds it (`include/foo -> .`, `up ->
        // ..`) names no module a checker would use, and through it every
        // path has endless names (re-attack RD-1: two such links made
        // 32,767 names of one file); it is left out.
        let inner: Vec<(&PathBuf, PathBuf)> = links
            .iter()
            .filter_map(|link| {
                let target = link.canonicalize().ok()?;
                let holds_itself = link
                    .parent()
                    .and_then(|folder| folder.canonicalize().ok())
                    .is_some_and(|folder| folder.starts_with(&target));
                (target.starts_with(&self.root) && target != self.root && !holds_itself)
                    .then_some((link, target))
            })
            .collect();
        if inner.is_empty() {
            return;
        }
        for list in [
            &mut changes.created,
            &mut changes.changed,
            &mut changes.deleted,
        ] {
            // Again through the aliases made, for a chain of links
            // (`pkg -> real`, `real/sub -> ../other`; re-attack RC-13), as
            // many rounds as there are links.
            let mut known: std::collections::HashSet<PathBuf> = list.iter().cloned().collect();
            let mut fresh: Vec<PathBuf> = list.clone();
            for _ in 0..inner.len() {
                let aliases: Vec<PathBuf> = fresh
                    .iter()
                    .flat_map(|path| {
                        inner.iter().filter_map(move |(link, target)| {
                            let inside = path.strip_prefix(target).ok()?;
                            Some(link.join(inside))
                        })
                    })
                    .filter(|alias| known.len() < MAX_ALIASES && known.insert(alias.clone()))
                    .collect();
                if aliases.is_empty() || known.len() >= MAX_ALIASES {
                    list.extend(aliases);
                    break;
                }
                list.extend(aliases.iter().cloned());
                fresh = aliases;
            }
        }
    }

    fn handles(&self, name: &str) -> bool {
        let lower = name.to_lowercase();
        self.extensions
            .iter()
            .any(|extension| lower.ends_with(extension.as_str()) && lower.len() > extension.len())
            // A C/C++ server reads textual includes it has no language for.
            || (checks_c(&self.extensions) && is_c_family(Path::new(&lower)))
    }
}

/// Whether the project's configuration narrows which Python files pyright
/// reads (`include` or `exclude` in `pyrightconfig.json`, or in
/// `pyproject.toml` beside a `[tool.pyright]` table). Told of a created
/// file outside them, pyright does not read it, though an import may
/// resolve to it: such a project gets a restart instead. Unreadable counts
/// as narrowing (a needless restart costs time, a missed one a wrong
/// answer).
pub fn narrows_python_files(root: &Path) -> bool {
    let read = |name: &str| -> Result<Option<String>, ()> {
        match std::fs::read_to_string(root.join(name)) {
            Ok(text) => Ok(Some(text)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(_) => Err(()),
        }
    };
    let names_files = |text: &str| text.contains("include") || text.contains("exclude");
    match read("pyrightconfig.json") {
        Ok(Some(text)) if names_files(&text) => return true,
        Err(()) => return true,
        _ => {}
    }
    match read("pyproject.toml") {
        Ok(Some(text)) => text.contains("[tool.pyright]") && names_files(&text),
        Ok(None) => false,
        Err(()) => true,
    }
}

/// Adds the stamp of `path` (followed through links) to `configs`;
/// whether it exists.
fn stamp_into(configs: &mut HashMap<PathBuf, Entry>, path: &Path) -> bool {
    match std::fs::metadata(path) {
        Ok(metadata) => {
            configs.insert(
                path.to_path_buf(),
                Entry {
                    stamp: Stamp::of(&metadata),
                    racy_hash: None,
                },
            );
            true
        }
        Err(_) => false,
    }
}

fn is_config_name(name: &str) -> bool {
    CONFIG_FILES.contains(&name) || (name.starts_with("tsconfig") && name.ends_with(".json"))
}

enum How {
    Created,
    Changed,
    Deleted,
}

/// Compares the new walk with the old one, reports each difference, and
/// sets the racy hashes of the new entries.
fn diff(
    old: &HashMap<PathBuf, Entry>,
    new: &mut HashMap<PathBuf, Entry>,
    walk_started: SystemTime,
    first: bool,
    report: &mut dyn FnMut(PathBuf, How),
) {
    let racy_since = walk_started.checked_sub(RACY_WINDOW).unwrap_or(UNIX_EPOCH);
    for (path, entry) in new.iter_mut() {
        let racy = entry.stamp.latest() >= racy_since;
        let previous = old.get(path);
        // Hashed when it is racy now, or was racy and looks the same: only
        // then can equal stamps hide a change.
        let needs_hash = racy || previous.is_some_and(|p| p.racy_hash.is_some());
        let hash = needs_hash.then(|| content_hash(path)).flatten();
        if racy {
            entry.racy_hash = hash;
        }
        if first {
            continue;
        }
        match previous {
            None => report(path.clone(), How::Created),
            Some(previous) => {
                let moved = previous.stamp != entry.stamp
                    || matches!((previous.racy_hash, hash), (Some(a), Some(b)) if a != b);
                if moved {
                    report(path.clone(), How::Changed);
                }
            }
        }
    }
    if first {
        return;
    }
    for path in old.keys() {
        if !new.contains_key(path) {
            report(path.clone(), How::Deleted);
        }
    }
}

/// The folders among `changes`' created and deleted paths (see
/// [`Stamp::folder`]) with no file created or deleted under them.
fn bare_folders(
    now: &HashMap<PathBuf, Entry>,
    before: &HashMap<PathBuf, Entry>,
    changes: &DiskChanges,
) -> Vec<PathBuf> {
    let is_folder = |map: &HashMap<PathBuf, Entry>, path: &Path| {
        map.get(path).is_some_and(|e| e.stamp == Stamp::folder())
    };
    // The folders that hold a file among `paths`: every file's ancestors,
    // in one pass (re-attack RC-17: a test per folder and file was
    // quadratic, 10 s for 5,100 folders).
    let holding_files = |paths: &[PathBuf], map: &HashMap<PathBuf, Entry>| {
        let mut holding = std::collections::HashSet::new();
        for file in paths.iter().filter(|path| !is_folder(map, path)) {
            for ancestor in file.ancestors().skip(1) {
                if !holding.insert(ancestor.to_path_buf()) {
                    break;
                }
            }
        }
        holding
    };
    let (made, removed) = (
        holding_files(&changes.created, now),
        holding_files(&changes.deleted, before),
    );
    let created = changes
        .created
        .iter()
        .filter(|path| is_folder(now, path) && !made.contains(*path));
    let deleted = changes
        .deleted
        .iter()
        .filter(|path| is_folder(before, path) && !removed.contains(*path));
    created.chain(deleted).cloned().collect()
}

/// Those of `folders` whose name an `import` or `from` line of one of the
/// Python files in `files` names as a word (`import nsdir`, `from a.nsdir
/// import x`): only those can change what an import resolves to. Read
/// only when a bare folder came or went.
fn named_in_imports(files: &HashMap<PathBuf, Entry>, folders: Vec<PathBuf>) -> Vec<PathBuf> {
    if folders.is_empty() {
        return folders;
    }
    // Every word of every import line, in one read of the sources (5,000
    // folders made at once cost no more than one).
    let mut words: std::collections::HashSet<String> = std::collections::HashSet::new();
    let sources = files.iter().filter(|(path, entry)| {
        entry.stamp != Stamp::folder()
            && path
                .extension()
                .is_some_and(|ext| ext == "py" || ext == "pyi")
    });
    for (path, _) in sources {
        let Ok(Some(text)) = crate::util::fsread::read_text(
            path,
            crate::util::fsread::limits::SOURCE,
            crate::util::fsread::Links::Follow,
        ) else {
            continue;
        };
        for line in text.lines().map(str::trim_start) {
            if line.starts_with("import ") || line.starts_with("from ") {
                words.extend(
                    line.split(|c: char| !(c == '_' || c.is_alphanumeric()))
                        .filter(|word| !word.is_empty())
                        .map(str::to_string),
                );
            }
        }
    }
    folders
        .into_iter()
        .filter(|folder| {
            folder
                .file_name()
                .is_some_and(|name| words.contains(name.to_string_lossy().as_ref()))
        })
        .collect()
}

fn content_hash(path: &Path) -> Option<u64> {
    std::fs::read(path).ok().map(|bytes| fnv1a(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_bare_unless_a_file_came_or_went_under_it() {
        let entry = |stamp| Entry {
            stamp,
            racy_hash: None,
        };
        let file = Stamp {
            len: 1,
            ..Stamp::folder()
        };
        let now = HashMap::from([
            (PathBuf::from("/r/ns"), entry(Stamp::folder())),
            (PathBuf::from("/r/pkg"), entry(Stamp::folder())),
            (PathBuf::from("/r/pkg/deep"), entry(Stamp::folder())),
            (PathBuf::from("/r/pkg/deep/m.py"), entry(file)),
        ]);
        let changes = DiskChanges {
            created: ["/r/ns", "/r/pkg", "/r/pkg/deep", "/r/pkg/deep/m.py"]
                .map(PathBuf::from)
                .to_vec(),
            ..DiskChanges::default()
        };
        assert_eq!(
            bare_folders(&now, &HashMap::new(), &changes),
            [PathBuf::from("/r/ns")]
        );
    }

    fn temp(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "ralph-fresh-{label}-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    fn view(root: &Path) -> DiskView {
        DiskView::new(root, &[".py".to_string(), ".pyi".to_string()], &[])
    }

    #[test]
    fn the_first_walk_is_the_baseline_then_every_kind_of_change_is_seen() {
        let root = temp("kinds");
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        std::fs::write(root.join("b.py"), "y = 2\n").unwrap();
        std::fs::write(root.join("notes.txt"), "not a source\n").unwrap();
        let mut view = view(&root);
        assert!(view.refresh().is_empty());
        assert_eq!(view.len(), 2);
        assert!(view.refresh().is_empty(), "nothing changed");

        std::fs::write(root.join("a.py"), "x = 'one'\n").unwrap();
        std::fs::write(root.join("c.py"), "z = 3\n").unwrap();
        std::fs::remove_file(root.join("b.py")).unwrap();
        std::fs::write(root.join("notes.txt"), "still not a source\n").unwrap();
        let changes = view.refresh();
        assert_eq!(changes.changed, [root.join("a.py")]);
        assert_eq!(changes.created, [root.join("c.py")]);
        assert_eq!(changes.deleted, [root.join("b.py")]);
        assert!(changes.configs.is_empty());
        assert!(view.refresh().is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_same_size_rewrite_with_equal_stamps_is_seen_by_its_hash() {
        // Two writes of the same size within one tick of the clock: equal
        // stamps, the content alone differs.
        let root = temp("racy");
        let file = root.join("a.py");
        std::fs::write(&file, "x: str = 1\n").unwrap();
        let stamp = Stamp::of(&std::fs::metadata(&file).unwrap());
        let old = HashMap::from([(
            file.clone(),
            Entry {
                stamp,
                racy_hash: Some(fnv1a(b"x: int = 1\n")),
            },
        )]);
        let mut new = HashMap::from([(
            file.clone(),
            Entry {
                stamp,
                racy_hash: None,
            },
        )]);
        let mut seen = Vec::new();
        diff(
            &old,
            &mut new,
            SystemTime::now(),
            false,
            &mut |path, how| seen.push((path, matches!(how, How::Changed))),
        );
        assert_eq!(seen, [(file.clone(), true)]);
        assert_eq!(new[&file].racy_hash, Some(fnv1a(b"x: str = 1\n")));
        // The same content again: no change.
        let old = new.clone();
        let mut seen = Vec::new();
        diff(&old, &mut new, SystemTime::now(), false, &mut |path, _| {
            seen.push(path)
        });
        assert!(seen.is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_file_renamed_over_another_is_a_change() {
        // `sed -i` writes a new file and renames it over the old one.
        let root = temp("renamed");
        let file = root.join("a.py");
        std::fs::write(&file, "x: int = 1\n").unwrap();
        let mut view = view(&root);
        view.refresh();
        let new = root.join(".a.py.tmp");
        std::fs::write(&new, "x: str = 1\n").unwrap();
        std::fs::rename(&new, &file).unwrap();
        assert_eq!(view.refresh().changed, std::slice::from_ref(&file));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_symlink_retargeted_is_a_change() {
        // `ln -sfn vendor/v2.py lnk.py`: the link is replaced, its target
        // differs; a server reading lnk.py reads other text now.
        let root = temp("relinked");
        std::fs::create_dir_all(root.join("vendor")).unwrap();
        std::fs::write(root.join("vendor/v1.py"), "def v() -> int: return 1\n").unwrap();
        std::fs::write(root.join("vendor/v2.py"), "def v() -> str: return ''\n").unwrap();
        std::os::unix::fs::symlink("vendor/v1.py", root.join("lnk.py")).unwrap();
        let mut view = view(&root);
        assert!(view.refresh().is_empty());
        assert_eq!(view.len(), 3, "the link is a source file too");
        let status = std::process::Command::new("ln")
            .args(["-sfn", "vendor/v2.py", "lnk.py"])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(view.refresh().changed, [root.join("lnk.py")]);
        assert!(view.refresh().is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_change_to_a_symlinks_target_outside_the_root_is_a_change_of_the_link() {
        let root = temp("link-out");
        let outside = temp("link-out-target");
        std::fs::write(outside.join("t.py"), "def l() -> int: return 1\n").unwrap();
        std::os::unix::fs::symlink(outside.join("t.py"), root.join("lnk.py")).unwrap();
        let mut view = view(&root);
        view.refresh();
        std::fs::write(outside.join("t.py"), "def l() -> str: return ''\n").unwrap();
        assert_eq!(view.refresh().changed, [root.join("lnk.py")]);
        // A dangling link is a deleted file.
        std::fs::remove_file(outside.join("t.py")).unwrap();
        assert_eq!(view.refresh().deleted, [root.join("lnk.py")]);
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&outside);
    }

    #[test]
    fn a_change_under_a_folder_link_leading_out_of_the_root_is_seen() {
        let root = temp("folder-link-out");
        let outside = temp("folder-link-out-target");
        std::fs::create_dir_all(outside.join("sub")).unwrap();
        std::fs::write(outside.join("om.py"), "def o() -> int: return 1\n").unwrap();
        std::fs::write(outside.join("sub/deep.py"), "d = 1\n").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("lib")).unwrap();
        // A link to a folder inside the root is walked as that folder.
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::write(root.join("real/r.py"), "r = 1\n").unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("alias")).unwrap();
        let mut view = view(&root);
        assert!(view.refresh().is_empty());
        assert_eq!(view.len(), 3, "lib/om.py, lib/sub/deep.py, real/r.py");
        std::fs::write(outside.join("om.py"), "def o() -> str: return ''\n").unwrap();
        assert_eq!(view.refresh().changed, [root.join("lib/om.py")]);
        std::fs::write(outside.join("sub/new.py"), "n = 1\n").unwrap();
        assert_eq!(view.refresh().created, [root.join("lib/sub/new.py")]);
        // A folder link inside the linked folder, and a cycle back.
        let deeper = temp("folder-link-out-deeper");
        std::fs::write(deeper.join("dm.py"), "d = 1\n").unwrap();
        std::os::unix::fs::symlink(&deeper, outside.join("nested")).unwrap();
        std::os::unix::fs::symlink(&outside, deeper.join("back")).unwrap();
        assert_eq!(view.refresh().created, [root.join("lib/nested/dm.py")]);
        std::fs::write(deeper.join("dm.py"), "d: str = 1\n").unwrap();
        assert_eq!(view.refresh().changed, [root.join("lib/nested/dm.py")]);
        // The link pointed elsewhere is a configuration change.
        std::fs::remove_file(root.join("lib")).unwrap();
        std::os::unix::fs::symlink(&deeper, root.join("lib")).unwrap();
        assert!(view.refresh().configs.contains(&root.join("lib")));
        let _ = std::fs::remove_dir_all(&deeper);
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&outside);
    }

    #[test]
    fn a_git_ignored_source_file_is_walked() {
        // Generated code is often git-ignored and imported all the same.
        let root = temp("ignored");
        std::fs::create_dir_all(root.join("gen")).unwrap();
        std::fs::write(root.join(".gitignore"), "gen/\n").unwrap();
        std::fs::write(root.join("gen/g.py"), "def g() -> int: return 1\n").unwrap();
        let mut view = view(&root);
        view.refresh();
        std::fs::write(root.join("gen/g.py"), "def g() -> str: return 'one'\n").unwrap();
        assert_eq!(view.refresh().changed, [root.join("gen/g.py")]);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn pyright_configuration_that_names_files_narrows_them() {
        let root = temp("narrows");
        assert!(!narrows_python_files(&root));
        std::fs::write(root.join("pyrightconfig.json"), r#"{"strict": []}"#).unwrap();
        assert!(!narrows_python_files(&root));
        std::fs::write(root.join("pyrightconfig.json"), r#"{"exclude": ["gen"]}"#).unwrap();
        assert!(narrows_python_files(&root));
        std::fs::remove_file(root.join("pyrightconfig.json")).unwrap();
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.ruff]\nexclude = [\"gen\"]\n",
        )
        .unwrap();
        assert!(!narrows_python_files(&root), "not pyright's");
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.pyright]\ninclude = [\"src\"]\n",
        )
        .unwrap();
        assert!(narrows_python_files(&root));
        let _ = std::fs::remove_dir_all(&root);
    }

    fn ts_view(root: &Path) -> DiskView {
        DiskView::new(root, &[".ts".to_string(), ".js".to_string()], &[])
    }

    #[test]
    fn a_config_reached_through_extends_is_a_configuration_file() {
        let root = temp("extends");
        let shared = temp("extends-shared");
        std::fs::create_dir_all(root.join("configs")).unwrap();
        std::fs::write(
            root.join("tsconfig.json"),
            format!(
                "{{\n // comment\n \"extends\": [\"./configs/base\", \"{}/shared.json\"],\n}}",
                shared.display()
            ),
        )
        .unwrap();
        std::fs::write(
            root.join("configs/base.json"),
            r#"{"extends": "@tsconfig/x/tsconfig.json"}"#,
        )
        .unwrap();
        std::fs::create_dir_all(root.join("node_modules/@tsconfig/x")).unwrap();
        std::fs::write(root.join("node_modules/@tsconfig/x/tsconfig.json"), "{}").unwrap();
        std::fs::write(shared.join("shared.json"), "{}").unwrap();
        std::fs::write(root.join("a.ts"), "export {};\n").unwrap();
        let mut view = ts_view(&root);
        assert!(view.refresh().is_empty());
        assert!(
            view.deps
                .contains(&root.join("node_modules/@tsconfig/x/tsconfig.json")),
            "{:?}",
            view.deps
        );
        for (file, text) in [
            (
                root.join("configs/base.json"),
                r#"{"extends": "@tsconfig/x/tsconfig.json", "compilerOptions": {"strict": true}}"#,
            ),
            (
                shared.join("shared.json"),
                r#"{"compilerOptions": {"strict": true}}"#,
            ),
            (
                root.join("node_modules/@tsconfig/x/tsconfig.json"),
                r#"{"compilerOptions": {}}"#,
            ),
        ] {
            std::fs::write(&file, text).unwrap();
            let changes = view.refresh();
            assert!(changes.configs.contains(&file), "{file:?}: {changes:?}");
        }
        assert!(view.refresh().is_empty());
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&shared);
    }

    #[test]
    fn json_files_count_where_typescript_resolves_json_modules() {
        let root = temp("json-modules");
        std::fs::write(root.join("tsconfig.json"), "{}").unwrap();
        std::fs::write(root.join("data.json"), r#"{"v": 1}"#).unwrap();
        std::fs::write(root.join("a.ts"), "export {};\n").unwrap();
        let mut view = ts_view(&root);
        view.refresh();
        std::fs::write(root.join("data.json"), r#"{"v": "one"}"#).unwrap();
        assert!(
            view.refresh().is_empty(),
            "JSON is not read without resolveJsonModule"
        );
        std::fs::write(
            root.join("tsconfig.json"),
            r#"{"compilerOptions": {"resolveJsonModule": true}}"#,
        )
        .unwrap();
        let changes = view.refresh();
        assert!(
            changes.configs.contains(&root.join("tsconfig.json")),
            "{changes:?}"
        );
        std::fs::write(root.join("data.json"), r#"{"v": 2}"#).unwrap();
        assert_eq!(view.refresh().configs, [root.join("data.json")]);
        std::fs::write(root.join("more.json"), "{}").unwrap();
        assert_eq!(view.refresh().configs, [root.join("more.json")], "created");
        std::fs::remove_file(root.join("more.json")).unwrap();
        assert_eq!(view.refresh().configs, [root.join("more.json")], "deleted");
        assert!(view.refresh().is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_package_under_node_modules_changed_or_added_is_seen() {
        let root = temp("node-modules");
        let lib = root.join("node_modules/mylib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(
            lib.join("package.json"),
            r#"{"name": "mylib", "types": "lib/main.d.ts"}"#,
        )
        .unwrap();
        std::fs::create_dir_all(lib.join("lib")).unwrap();
        std::fs::write(
            lib.join("lib/main.d.ts"),
            "export declare function f(): number;\n",
        )
        .unwrap();
        std::fs::write(root.join("a.ts"), "export {};\n").unwrap();
        let mut view = ts_view(&root);
        view.refresh();
        std::fs::write(
            lib.join("lib/main.d.ts"),
            "export declare function f(): string;\n",
        )
        .unwrap();
        assert_eq!(view.refresh().configs, [lib.join("lib/main.d.ts")]);
        std::fs::create_dir_all(root.join("node_modules/@types/other")).unwrap();
        std::fs::write(root.join("node_modules/@types/other/index.d.ts"), "").unwrap();
        std::fs::write(root.join("node_modules/@types/other/package.json"), "{}").unwrap();
        let changes = view.refresh();
        assert!(
            changes.configs.contains(&root.join("node_modules")),
            "{changes:?}"
        );
        assert!(view.refresh().is_empty(), "{:?}", view.refresh());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn python_files_on_an_extra_search_path_outside_the_project_are_seen() {
        let root = temp("extra-paths");
        let outside = temp("extra-paths-lib");
        std::fs::write(outside.join("ext.py"), "def e() -> int: return 1\n").unwrap();
        std::fs::write(
            root.join("pyrightconfig.json"),
            format!(r#"{{"extraPaths": ["{}"]}}"#, outside.display()),
        )
        .unwrap();
        std::fs::write(root.join("a.py"), "from ext import e\n").unwrap();
        let mut view = view(&root);
        view.refresh();
        std::fs::write(outside.join("ext.py"), "def e() -> str: return ''\n").unwrap();
        assert_eq!(view.refresh().configs, [outside.join("ext.py")]);
        assert!(view.refresh().is_empty());
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&outside);
    }

    #[test]
    fn editable_installs_mapped_paths_and_skipped_extra_paths_are_seen() {
        // `pip install -e ../lib`: a .pth in site-packages names the folder.
        let root = temp("editable");
        let lib = temp("editable-lib");
        let site = root.join(".venv/lib/python3.12/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        std::fs::write(
            site.join("__editable__.lib.pth"),
            format!("{}\n", lib.display()),
        )
        .unwrap();
        std::fs::write(lib.join("l.py"), "def l() -> int: return 1\n").unwrap();
        std::fs::create_dir_all(root.join("target/gen")).unwrap();
        std::fs::write(root.join("target/gen/g.py"), "G = 1\n").unwrap();
        std::fs::write(
            root.join("pyrightconfig.json"),
            r#"{"extraPaths": ["target/gen"]}"#,
        )
        .unwrap();
        std::fs::write(root.join("a.py"), "from l import l\n").unwrap();
        let mut view = view(&root);
        view.refresh();
        std::fs::write(lib.join("l.py"), "def l() -> str: return ''\n").unwrap();
        assert_eq!(view.refresh().configs, [lib.join("l.py")]);
        std::fs::write(root.join("target/gen/g.py"), "G = 'one'\n").unwrap();
        assert_eq!(view.refresh().configs, [root.join("target/gen/g.py")]);

        // tsconfig `paths` mapped outside the project.
        let ts_root = temp("ts-paths");
        let shared = temp("ts-paths-shared");
        std::fs::write(
            ts_root.join("tsconfig.json"),
            format!(
                r#"{{"compilerOptions": {{"baseUrl": ".", "paths": {{"@s/*": ["{}/*"]}}}}}}"#,
                shared.display()
            ),
        )
        .unwrap();
        std::fs::write(shared.join("s.ts"), "export const s = 1;\n").unwrap();
        std::fs::write(ts_root.join("a.ts"), "import { s } from '@s/s';\n").unwrap();
        let mut ts = ts_view(&ts_root);
        ts.refresh();
        std::fs::write(shared.join("s.ts"), "export const s = 'one';\n").unwrap();
        assert_eq!(ts.refresh().configs, [shared.join("s.ts")]);
        for dir in [root, lib, ts_root, shared] {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn configuration_files_ignored_folders_and_the_state_root() {
        let root = temp("configs");
        let state = root.join(".claude/orchestrator");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::create_dir_all(root.join("node_modules/dep")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        let mut view = DiskView::new(&root, &[".py".to_string()], std::slice::from_ref(&state));
        view.refresh();
        std::fs::write(root.join("pyproject.toml"), "[tool.pyright]\n").unwrap();
        std::fs::write(root.join("sub/tsconfig.base.json"), "{}").unwrap();
        std::fs::write(root.join(".ruff.toml"), "").unwrap();
        std::fs::write(root.join("node_modules/dep/x.py"), "").unwrap();
        std::fs::write(state.join("y.py"), "").unwrap();
        let changes = view.refresh();
        assert_eq!(
            changes.configs,
            [
                root.join(".ruff.toml"),
                root.join("pyproject.toml"),
                root.join("sub/tsconfig.base.json")
            ]
        );
        assert!(changes.created.is_empty(), "{changes:?}");
        let _ = std::fs::remove_dir_all(&root);
    }
}

//! A bubblewrap confinement for code the hooks run outside Claude Code's
//! sandbox on the agent's behalf (a loop's check, a language server that
//! loads the project): the whole file system read-only, the project
//! writable, a private `/tmp`, the supervision (state root, hook and
//! settings files, `.git`) read-only on top, no network but loopback, its
//! own process ids, killed with us. The same walls Claude Code puts around
//! a Bash command, so what the agent could not do from Bash it cannot do
//! through code it wrote and a hook ran.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// What one confined run may and may not change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// Writable (the project).
    pub project: PathBuf,
    /// Read-only on top of the writable places; a path that does not exist
    /// is skipped (bubblewrap cannot bind it).
    pub read_only: Vec<PathBuf>,
    /// Extra writable places the user allowed (caches, say).
    pub writable: Vec<PathBuf>,
    /// Whether the network stays (the user's choice); else loopback only.
    pub network: bool,
    /// Environment variables set inside (a cache moved into `/tmp`).
    pub env: Vec<(String, String)>,
}

/// Bubblewrap's arguments for a run that changes nothing but its process
/// ids: the whole file system as it is (writable as it is), its own PID
/// namespace, killed with us. When its first process ends, the kernel ends
/// every process it left (a daemon detached with `setsid`, a server's
/// `--daemonize`): what a check started cannot outlive the check.
pub const OWN_PIDS: [&str; 7] = [
    "--dev-bind",
    "/",
    "/",
    "--proc",
    "/proc",
    "--unshare-pid",
    "--die-with-parent",
];

/// `bwrap OWN_PIDS -- program`, when bubblewrap can make a PID namespace
/// here (probed once per process); `None` where it cannot.
pub fn own_pids(program: &Path) -> Option<Command> {
    static WORKS: OnceLock<Option<PathBuf>> = OnceLock::new();
    let bwrap = WORKS.get_or_init(|| {
        let bwrap = super::trusted::program("bwrap", None);
        let works = Command::new(&bwrap)
            .args(OWN_PIDS)
            .args(["--", "true"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        works.then_some(bwrap)
    });
    let mut command = Command::new(bwrap.as_ref()?);
    command.args(OWN_PIDS).arg("--").arg(program);
    Some(command)
}

/// The bubblewrap binary, if one is installed and can build a sandbox here
/// (it cannot where user namespaces are off and it is not setuid). Probed
/// once per process; found only outside the project and temp folders
/// (`util::trusted`): a planted `bwrap` would un-wall everything.
pub fn bwrap() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let bwrap = super::trusted::program("bwrap", None);
            let works = Command::new(&bwrap)
                .args([
                    "--ro-bind",
                    "/",
                    "/",
                    "--dev",
                    "/dev",
                    "--unshare-net",
                    "--unshare-pid",
                    "--",
                    "true",
                ])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
            works.then_some(bwrap)
        })
        .as_deref()
}

impl Confinement {
    /// A symbolic link between the project and a path that must stay
    /// read-only (`.claude` itself a link to a folder elsewhere). Bubblewrap
    /// binds what the link leads to, but the link is an entry of the
    /// writable project: code inside could remove it and make a folder of
    /// its own in its place, with no loop and no hook registrations in it
    /// (sandbox attack N-1). Such walls are not built: the caller says why.
    pub fn linked_entry(&self) -> Option<PathBuf> {
        // A `.git` file (`gitdir: …`, a worktree or a submodule) naming a
        // git folder inside the project: only the file is read-only, the
        // folder with its config and hooks is the project's, writable
        // (re-check N-3). One outside the project is read-only anyway.
        let git = self.project.join(".git");
        if git.symlink_metadata().is_ok_and(|m| m.is_file())
            && let Some(dir) = std::fs::read_to_string(&git)
                .ok()
                .and_then(|text| text.lines().next().map(str::to_string))
                .and_then(|line| line.strip_prefix("gitdir:").map(|d| d.trim().to_string()))
        {
            let dir = crate::util::paths::lexically_normal(&self.project.join(dir));
            if dir.starts_with(&self.project) {
                return Some(git);
            }
        }
        if let Some(dir) = self.git_folder_elsewhere_inside() {
            return Some(dir);
        }
        for path in &self.read_only {
            let Ok(below) = path.strip_prefix(&self.project) else {
                continue;
            };
            let mut at = self.project.clone();
            for part in below.components() {
                at.push(part);
                match at.symlink_metadata() {
                    Ok(metadata) if metadata.file_type().is_symlink() => return Some(at),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }
        None
    }

    /// The repository's git folder or common folder as git itself finds it
    /// (a `commondir` file in `.git`, a `gitdir:` through a link back into
    /// the project), when it lies inside the project anywhere but `.git`:
    /// its config and hooks would be the project's, writable (re-check of
    /// N-3). Reading where the folder is runs no program.
    fn git_folder_elsewhere_inside(&self) -> Option<PathBuf> {
        let git = self.project.join(".git");
        git.symlink_metadata().ok()?;
        let output = crate::util::git::command(&self.project)
            .args(["rev-parse", "--absolute-git-dir", "--git-common-dir"])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        if !output.status.success() {
            return None;
        }
        let project = std::fs::canonicalize(&self.project).ok()?;
        let own = std::fs::canonicalize(&git).ok();
        let folders: Vec<PathBuf> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| std::fs::canonicalize(self.project.join(line.trim())).ok())
            .collect();
        if folders
            .iter()
            .any(|dir| dir.starts_with(&project) && Some(dir) != own.as_ref())
        {
            return Some(git);
        }
        // Inside the git folder, what git runs or reads as config may itself
        // be a link into the writable project (`.git/hooks` -> `tools/`).
        for folder in &folders {
            for name in ["config", "hooks", "info", "config.worktree"] {
                let path = folder.join(name);
                if path
                    .symlink_metadata()
                    .is_ok_and(|m| m.file_type().is_symlink())
                    && std::fs::canonicalize(&path).is_ok_and(|target| {
                        target.starts_with(&project) && !target.starts_with(folder)
                    })
                {
                    return Some(path);
                }
            }
        }
        None
    }

    /// Why walls with a [`Self::linked_entry`] are not built, for the user.
    pub fn linked_entry_reason(link: &Path) -> String {
        let shown = crate::util::text::escape_controls(&link.to_string_lossy()).into_owned();
        if link.file_name().is_some_and(|name| name != ".git")
            && link.parent().is_some_and(|dir| dir.ends_with(".git"))
        {
            return format!(
                "{shown} is a link into the project: git would run or read what the code \
                 wrote there; make it a real file or folder to run this in sandbox mode"
            );
        }
        let is_symlink = link
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink());
        if !is_symlink && link.file_name().is_some_and(|name| name == ".git") {
            return format!(
                "{shown} names a git folder inside the project, whose config and hooks the \
                 walls cannot keep read-only; move that folder into `.git` (or outside the \
                 project) to run this in sandbox mode"
            );
        }
        format!(
            "{shown} is a symbolic link: inside the sandbox the link itself could be replaced \
             by a folder of the code's own; make it a real folder (move what it points \
             at there) to run this in sandbox mode"
        )
    }

    /// `bwrap … -- program`: the caller adds the arguments, the working
    /// directory and the rest.
    pub fn command(&self, bwrap: &Path, program: &Path) -> Command {
        let mut command = Command::new(bwrap);
        command.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
        command.args(["--tmpfs", "/dev/shm", "--tmpfs", "/tmp"]);
        // After the tmpfs: a project under /tmp is bound back over it.
        command.arg("--bind").arg(&self.project).arg(&self.project);
        for place in &self.writable {
            if place.exists() {
                command.arg("--bind").arg(place).arg(place);
            }
        }
        for path in &self.read_only {
            if path.symlink_metadata().is_ok() {
                command.arg("--ro-bind").arg(path).arg(path);
            }
        }
        if !self.network {
            command.arg("--unshare-net");
        }
        command.args([
            "--unshare-pid",
            "--unshare-ipc",
            "--die-with-parent",
            "--new-session",
        ]);
        command.args(["--setenv", "TMPDIR", "/tmp"]);
        for (key, value) in &self.env {
            command.arg("--setenv").arg(key).arg(value);
        }
        command.arg("--").arg(program);
        command
    }
}

/// The confinement language servers (and their command-line runs) start
/// in, for this process: set in sandbox mode by whoever knows the project
/// (see `Ctx`), outside Claude Code's sandbox. A server loads the project:
/// a binary in its `node_modules/.bin` or `.venv/bin`, the TypeScript it
/// ships, its build scripts (rust-analyzer), its Python (pyright) — all of
/// it the agent can write.
static SERVERS: Mutex<Option<Confinement>> = Mutex::new(None);

/// Sets (or clears) the servers' confinement for this process.
pub fn set_for_servers(confinement: Option<Confinement>) {
    if let Ok(mut servers) = SERVERS.lock() {
        *servers = confinement;
    }
}

/// The command that starts a server's `program`: as is, or inside the
/// servers' confinement; an error when it must be confined and bubblewrap
/// cannot build a sandbox here (the server is then reported as not
/// starting, and no check waits for it).
pub fn server_command(program: &Path) -> std::io::Result<Command> {
    let confinement = SERVERS.lock().ok().and_then(|servers| servers.clone());
    let Some(confinement) = confinement else {
        return Ok(Command::new(program));
    };
    if let Some(link) = confinement.linked_entry() {
        return Err(std::io::Error::other(format!(
            "sandbox mode starts no language server here: {}",
            Confinement::linked_entry_reason(&link)
        )));
    }
    match bwrap() {
        Some(bwrap) => Ok(confinement.command(bwrap, program)),
        None => Err(std::io::Error::other(
            "sandbox mode starts language servers only inside bubblewrap, which cannot build a sandbox here",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // See: sandbox attack T-3: `.git` a symbolic link to a git folder
    // outside the project was said to name "a git folder inside the
    // project".
    #[test]
    fn a_git_link_is_called_a_link() {
        let base = std::env::temp_dir().join(format!("confine-git-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("outside.git")).unwrap();
        std::fs::create_dir_all(base.join("project")).unwrap();
        let git = base.join("project/.git");
        std::os::unix::fs::symlink(base.join("outside.git"), &git).unwrap();
        let said = Confinement::linked_entry_reason(&git);
        assert!(said.contains("symbolic link"), "{said}");
        assert!(!said.contains("inside the project"), "{said}");
        std::fs::remove_file(&git).unwrap();
        std::fs::write(&git, "gitdir: gitreal\n").unwrap();
        let said = Confinement::linked_entry_reason(&git);
        assert!(said.contains("inside the project"), "{said}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_walls_are_the_sandboxs() {
        let confinement = Confinement {
            project: PathBuf::from("/"),
            read_only: vec![PathBuf::from("/"), PathBuf::from("/no/such/path")],
            writable: vec![],
            network: false,
            env: vec![("A".into(), "b".into())],
        };
        let command = confinement.command(Path::new("bwrap"), Path::new("sh"));
        let args: Vec<String> = command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let line = args.join(" ");
        assert!(
            line.starts_with("--ro-bind / / --dev /dev --proc /proc"),
            "{line}"
        );
        assert!(line.contains("--tmpfs /tmp --bind / /"), "{line}");
        assert!(!line.contains("/no/such/path"), "{line}");
        for flag in [
            "--unshare-net",
            "--unshare-pid",
            "--die-with-parent",
            "--new-session",
        ] {
            assert!(line.contains(flag), "{flag}: {line}");
        }
        assert!(line.ends_with("--setenv A b -- sh"), "{line}");
    }
}

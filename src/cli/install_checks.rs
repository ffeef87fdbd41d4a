//! Checks that keep a first install from leaving hooks that stop working
//! later without a word (binaries in a package manager's cache, a watch
//! folder the guard cannot create), and the dashboard that uninstall stops.

use std::path::Path;

/// Path parts of package-manager caches that are cleaned or pruned:
/// `uvx` (uv's archive and build caches), `npx`, `pipx run`.
const EPHEMERAL: &[(&str, &str)] = &[
    (
        "/archive-v0/",
        "uv tool install ralph-hooks (or pipx install)",
    ),
    (
        "/builds-v0/",
        "uv tool install ralph-hooks (or pipx install)",
    ),
    ("/_npx/", "npm install -g ralph-hooks"),
    ("/pipx/.cache/", "pipx install ralph-hooks"),
];

/// Refuses hook binaries that live in a cache a cleanup deletes (`uvx …
/// ralph-hooks install`, `npx …`): every hook would then fail with "not
/// found" and no loop would be enforced, silently.
pub fn refuse_ephemeral(bin_dir: &Path) -> anyhow::Result<()> {
    let text = format!("{}/", bin_dir.to_string_lossy());
    if let Some((_, persistent)) = EPHEMERAL.iter().find(|(part, _)| text.contains(part)) {
        anyhow::bail!(
            "the hook binaries are in a package manager's cache ({}), which a cache cleanup deletes, and every hook with it; install ralph-hooks for good first (`{persistent}`), then run `ralph-hooks install` from there; nothing was changed",
            bin_dir.display()
        );
    }
    Ok(())
}

/// Why the guard's watch folder for `state_root` cannot be made, if so:
/// the guard then checks no Bash command (it fails open and says so at
/// each one).
pub fn watch_folder_problem(state_root: &Path) -> Option<String> {
    let Some(dir) = crate::state::journal::watch_dir(state_root) else {
        return Some("neither XDG_STATE_HOME nor HOME is an absolute path".into());
    };
    let parent = dir.parent()?;
    // The folders the probe makes go again: asking leaves nothing behind
    // (attack A32N-1: doctor left an empty `~/.local/state/ralph-hooks`).
    let made: Vec<&Path> = parent
        .ancestors()
        .take_while(|folder| !folder.exists())
        .collect();
    let answer = match std::fs::create_dir_all(parent) {
        Ok(()) => {
            let probe = parent.join(format!(".doctor-{}", std::process::id()));
            match std::fs::create_dir(&probe) {
                Ok(()) => {
                    let _ = std::fs::remove_dir(&probe);
                    None
                }
                Err(error) => Some(format!(
                    "cannot create folders in {}: {error}",
                    parent.display()
                )),
            }
        }
        Err(error) => Some(format!("cannot create {}: {error}", parent.display())),
    };
    for folder in made {
        let _ = std::fs::remove_dir(folder);
    }
    answer
}

/// Stops the project's dashboard (`ralph-hooks monitor`, recorded in
/// `monitor.json`) before uninstall takes its state away; what was done.
/// A recorded pid is signalled only while it is still a `ralph-hooks
/// monitor` process (a pid can be reused).
pub fn stop_monitor(store: &crate::state::Store) -> Option<String> {
    let record = crate::monitor::running(store)?;
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", record.pid)).ok()?;
    let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let ours = words
        .first()
        .is_some_and(|argv0| argv0.ends_with(b"ralph-hooks"))
        && words.iter().any(|word| *word == b"monitor");
    if !ours {
        return None;
    }
    // SAFETY: plain signals to a pid checked just above.
    unsafe { libc::kill(record.pid as libc::pid_t, libc::SIGTERM) };
    for _ in 0..100 {
        // Gone, or a zombie its parent has not reaped yet.
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", record.pid)).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        if stat.is_empty() || state.starts_with('Z') {
            return Some(format!("Stopped the dashboard (pid {}).", record.pid));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Some(format!(
        "The dashboard (pid {}) did not stop within 5 s of SIGTERM; stop it by hand.",
        record.pid
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binaries_in_a_cache_are_refused() {
        for dir in [
            "/home/u/.cache/uv/archive-v0/DI6CnXvIfihV1nHV/bin",
            "/home/u/.npm/_npx/9358b4d33cc2c1a9/node_modules/ralph-hooks/bin",
        ] {
            assert!(refuse_ephemeral(Path::new(dir)).is_err(), "{dir}");
        }
        for dir in [
            "/home/u/.local/bin",
            "/usr/local/lib/node_modules/ralph-hooks/bin",
        ] {
            assert!(refuse_ephemeral(Path::new(dir)).is_ok(), "{dir}");
        }
    }
}

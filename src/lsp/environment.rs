//! The caller's environment that changes what a Python checker resolves,
//! carried with the server's start command so that the daemon's answer is
//! the one the caller would get from a cold check (engine attack E-14: a
//! daemon started from a shell with a virtualenv active answered a shell
//! without one from the virtualenv, and the other way round).
//!
//! A warm server keeps the environment it started with. The daemon is
//! started by whoever asks first (Claude Code's hooks, a terminal, CI), so
//! the variables that decide where imports come from — the active
//! virtualenv or conda environment, `PYTHONPATH`, `PYTHONHOME`, and the
//! interpreter `PATH` finds — go into the server's launch: a caller with
//! other ones gets a server started with its own (the fingerprint differs,
//! see `daemon::wire::fingerprint`). A variable the caller does not have
//! is carried as empty and removed from the server's environment, so one
//! the daemon happened to inherit does not leak in.
//!
//! `PATH` itself is passed on but counts only through the interpreter it
//! finds ([`PYTHON_FOUND`]): Claude Code's hooks and a terminal rarely
//! have the same `PATH`, and a restart for every difference that changes
//! nothing would cost a cold check each time.

use std::collections::BTreeMap;
use std::process::Command;

/// The variables a Python checker's module resolution reads, and those a
/// version manager's `python3` (a pyenv, asdf or mise shim) reads to
/// choose the interpreter it runs (re-attack RC-1: one shim path, two
/// Pythons).
pub const PYTHON_VARIABLES: &[&str] = &[
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONNOUSERSITE",
    "PYTHONUSERBASE",
    "PYENV_VERSION",
    "ASDF_PYTHON_VERSION",
    "MISE_PYTHON_VERSION",
];

/// Carries the interpreter the caller's `PATH` finds (`python3`, else
/// `python`), which is what `PATH` means to a Python checker; empty when it
/// finds none.
pub const PYTHON_FOUND: &str = "RALPH_HOOKS_PYTHON";

/// This process's values of [`PYTHON_VARIABLES`] and `PATH` (empty when
/// unset): what a caller sends with a project check the daemon runs.
pub fn caller_variables() -> BTreeMap<String, String> {
    PYTHON_VARIABLES
        .iter()
        .chain(&["PATH"])
        .map(|name| {
            let value = std::env::var_os(name)
                .map(|value| value.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name.to_string(), value)
        })
        .collect()
}

/// The caller's Python environment for a server whose own settings are
/// `given` (`.lsp.json` `env`, which wins): every variable of
/// [`PYTHON_VARIABLES`] (empty when unset), `PATH`, and [`PYTHON_FOUND`].
/// `caller` is the environment a check's caller sent (see
/// [`caller_variables`]); `None`: this process's.
/// A relative `PATH` entry (`.venv/bin`) is found from `cwd`, the folder
/// the server runs in (re-attack RC-10).
pub fn python_caller_environment(
    given: &BTreeMap<String, String>,
    caller: Option<&BTreeMap<String, String>>,
    cwd: &std::path::Path,
) -> Vec<(String, String)> {
    let own;
    let caller = match caller {
        Some(caller) => caller,
        None => {
            own = caller_variables();
            &own
        }
    };
    let caller = |name: &str| caller.get(name).cloned().unwrap_or_default();
    let mut env: Vec<(String, String)> = PYTHON_VARIABLES
        .iter()
        .chain(&["PATH"])
        .filter(|name| !given.contains_key(**name))
        .map(|name| (name.to_string(), caller(name)))
        .collect();
    let path = given.get("PATH").cloned().unwrap_or_else(|| caller("PATH"));
    // Named by its folder's real path: `/bin/python3` and
    // `/usr/bin/python3` on a merged-/usr system are one interpreter
    // (re-attack RC-3), while a virtualenv's `bin/python3`, a link to the
    // system one, stays its own (the link itself is kept).
    let found = ["python3", "python"]
        .iter()
        .find_map(|name| which::which_in(name, Some(&path), cwd).ok())
        .map(|found| {
            // Outside a virtualenv (no `pyvenv.cfg` beside its `bin/`), a
            // link to an interpreter is that interpreter (re-attack RD-6).
            let in_venv = found
                .parent()
                .and_then(|bin| bin.parent())
                .is_some_and(|venv| venv.join("pyvenv.cfg").is_file());
            if !in_venv && let Ok(real) = found.canonicalize() {
                return real;
            }
            match (
                found.parent().and_then(|p| p.canonicalize().ok()),
                found.file_name(),
            ) {
                (Some(folder), Some(name)) => folder.join(name),
                _ => found,
            }
        })
        .map(|found| found.display().to_string())
        .unwrap_or_default();
    env.push((PYTHON_FOUND.to_string(), found));
    env
}

/// Sets `env` on `command`; a [`PYTHON_VARIABLES`] entry that is empty is
/// removed instead (the caller does not have it).
pub fn apply(command: &mut Command, env: &[(String, String)]) {
    for (name, value) in env {
        if value.is_empty() && PYTHON_VARIABLES.contains(&name.as_str()) {
            command.env_remove(name);
        } else {
            command.env(name, value);
        }
    }
}

/// `env` as it counts for a server's identity: without `PATH` when
/// [`PYTHON_FOUND`] stands for it.
pub fn identity(env: &[(String, String)]) -> Vec<(String, String)> {
    let stands_for_path = env.iter().any(|(name, _)| name == PYTHON_FOUND);
    env.iter()
        .filter(|(name, _)| !(stands_for_path && name == "PATH"))
        .cloned()
        .collect()
}

/// Where a Python checker started with `env` looks for modules besides
/// the project (for the files it reads there, see `engine::deps`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PythonSearch {
    /// The virtual or conda environments (`VIRTUAL_ENV`, `CONDA_PREFIX`).
    pub environments: Vec<std::path::PathBuf>,
    /// The `PYTHONPATH` folders.
    pub paths: Vec<std::path::PathBuf>,
    /// The interpreter the caller's `PATH` finds ([`PYTHON_FOUND`]): its
    /// own `site-packages` count when no virtualenv is active.
    pub interpreter: Option<std::path::PathBuf>,
    /// Where the user site is (`PYTHONUSERBASE`, else `~/.local`), or
    /// `None` when `PYTHONNOUSERSITE` turns it off.
    pub user_base: Option<std::path::PathBuf>,
    /// `PYENV_VERSION`: which Python a pyenv shim runs.
    pub pyenv_version: Option<String>,
}

/// [`PythonSearch`] of a server started with `env`.
pub fn python_search(env: &[(String, String)]) -> PythonSearch {
    let value = |wanted: &'static str| {
        env.iter()
            .filter(move |(name, value)| name == wanted && !value.is_empty())
            .map(|(_, value)| value.clone())
    };
    PythonSearch {
        environments: value("VIRTUAL_ENV")
            .chain(value("CONDA_PREFIX"))
            .map(std::path::PathBuf::from)
            .collect(),
        paths: value("PYTHONPATH")
            .flat_map(|list| {
                // Relative entries are the server's folder's (see
                // `engine::deps`; re-attack RD-2).
                std::env::split_paths(&list)
                    .filter(|path| !path.as_os_str().is_empty())
                    .collect::<Vec<_>>()
            })
            .collect(),
        interpreter: value(PYTHON_FOUND).next().map(std::path::PathBuf::from),
        pyenv_version: value("PYENV_VERSION").next(),
        user_base: match value("PYTHONNOUSERSITE").next() {
            Some(_) => None,
            None => value("PYTHONUSERBASE")
                .next()
                .map(std::path::PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|home| std::path::Path::new(&home).join(".local"))
                }),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn an_unset_variable_is_removed_and_path_counts_through_the_interpreter() {
        let env = vec![
            ("VIRTUAL_ENV".to_string(), String::new()),
            ("PYTHONPATH".to_string(), "/x".to_string()),
            ("PATH".to_string(), "/a:/b".to_string()),
            (PYTHON_FOUND.to_string(), "/a/python3".to_string()),
        ];
        let mut command = Command::new("true");
        command.env("VIRTUAL_ENV", "/inherited");
        apply(&mut command, &env);
        let set: BTreeMap<String, Option<String>> = command
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        assert_eq!(set["VIRTUAL_ENV"], None);
        assert_eq!(set["PYTHONPATH"].as_deref(), Some("/x"));
        let names: Vec<String> = identity(&env).into_iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["VIRTUAL_ENV", "PYTHONPATH", PYTHON_FOUND]);
        assert_eq!(
            python_search(&env),
            PythonSearch {
                environments: Vec::new(),
                paths: vec!["/x".into()],
                interpreter: Some("/a/python3".into()),
                user_base: std::env::var_os("HOME").map(|home| Path::new(&home).join(".local")),
                pyenv_version: None,
            }
        );
    }

    #[test]
    fn the_user_site_is_where_pythonuserbase_says_unless_turned_off() {
        let with = |extra: &[(&str, &str)]| {
            let env: Vec<(String, String)> = extra
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect();
            python_search(&env).user_base
        };
        assert_eq!(with(&[("PYTHONUSERBASE", "/ub")]), Some("/ub".into()));
        assert_eq!(
            with(&[("PYTHONUSERBASE", "/ub"), ("PYTHONNOUSERSITE", "1")]),
            None
        );
        // Carried as empty: not set.
        assert_eq!(
            with(&[("PYTHONUSERBASE", ""), ("PYTHONNOUSERSITE", "")]),
            std::env::var_os("HOME").map(|home| Path::new(&home).join(".local"))
        );
    }

    #[test]
    fn settings_given_in_lsp_json_win() {
        let given = BTreeMap::from([("PYTHONPATH".to_string(), "/given".to_string())]);
        let env = python_caller_environment(&given, None, Path::new("/"));
        assert!(env.iter().all(|(name, _)| name != "PYTHONPATH"));
        assert!(env.iter().any(|(name, _)| name == PYTHON_FOUND));
    }

    #[test]
    fn one_interpreter_under_two_folder_names_is_one() {
        // A merged /usr: /bin is a link to usr/bin (re-attack RC-3).
        let merged = std::fs::canonicalize("/bin").is_ok_and(|bin| bin == Path::new("/usr/bin"));
        if !merged || !Path::new("/usr/bin/python3").exists() {
            eprintln!("skipped: /bin is not a link to /usr/bin, or no /usr/bin/python3");
            return;
        }
        let found = |path: &str| {
            let caller = BTreeMap::from([("PATH".to_string(), path.to_string())]);
            python_caller_environment(&BTreeMap::new(), Some(&caller), Path::new("/"))
                .into_iter()
                .find(|(name, _)| name == PYTHON_FOUND)
                .map(|(_, value)| value)
        };
        assert_eq!(found("/bin"), found("/usr/bin"));
        let real = std::fs::canonicalize("/usr/bin/python3").unwrap();
        assert_eq!(found("/usr/bin"), Some(real.display().to_string()));
    }

    #[test]
    fn a_relative_path_entry_is_found_from_the_servers_folder() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("ralph-env-rel-{}", std::process::id()));
        let bin = dir.join("myenv/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let python = bin.join("python3");
        std::fs::write(&python, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        let caller = BTreeMap::from([("PATH".to_string(), "myenv/bin".to_string())]);
        let found = python_caller_environment(&BTreeMap::new(), Some(&caller), &dir)
            .into_iter()
            .find(|(name, _)| name == PYTHON_FOUND)
            .map(|(_, value)| value);
        let expected = bin.canonicalize().unwrap().join("python3");
        assert_eq!(found.as_deref(), Some(expected.to_string_lossy().as_ref()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_callers_environment_is_used_as_sent() {
        let caller = BTreeMap::from([
            ("VIRTUAL_ENV".to_string(), "/venv".to_string()),
            ("PATH".to_string(), "/nowhere-at-all".to_string()),
        ]);
        let env: BTreeMap<String, String> =
            python_caller_environment(&BTreeMap::new(), Some(&caller), Path::new("/"))
                .into_iter()
                .collect();
        assert_eq!(env["VIRTUAL_ENV"], "/venv");
        assert_eq!(env["PYTHONPATH"], "");
        assert_eq!(env[PYTHON_FOUND], "");
        let env: Vec<(String, String)> = env.into_iter().collect();
        assert_eq!(
            python_search(&env).environments,
            [std::path::PathBuf::from("/venv")]
        );
    }
}

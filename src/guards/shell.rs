//! Enough of the POSIX shell (and bash) grammar to see which commands a Bash
//! tool call runs and which files it writes:
//!
//! - words, with quotes, escapes, `$'…'`, `$(…)`, backticks and `${…}`;
//! - the operators that separate commands (`;` `&&` `||` `|` `|&` `&`,
//!   newlines, parentheses) and every redirection form (`>`, `>>`, `>|`,
//!   `&>`, `&>>`, `>&`, `<>`, `N>`, before or after the command), kept apart
//!   from the words so `>/dev/null git push` is `git push`;
//! - here-documents and here-strings: their text is the command's input,
//!   read as a script only when a shell reads it (`bash <<EOF`, `cat <<EOF |
//!   sh`), so `cat > notes.md <<EOF` with `git push` inside is not a push;
//! - scripts handed to `sh -c`, `eval`, `sudo -s`, `env -S`, `su -c`,
//!   `watch`, `npx -c`, …, fed to a shell on a pipe (`echo … | sh`), or
//!   named as a script file (`sh deploy.sh`, `./deploy.sh`, `source x`),
//!   whose text a [`Scripts`] source supplies;
//! - `cd` and `pushd`, so each command knows where it runs.
//!
//! It expands nothing: a shell alias, a function or a variable holding a
//! command name is invisible here, as is a script in another language. (A
//! git alias is spelled out on request, [`git_alias_expanded`], from what
//! the text and a lookup the caller supplies say.) That is why
//! the guard also checks what a command did afterwards
//! ([`super::effects`]): this reading is the early, explained "no".
//!
//! Pure: text in, commands out (file contents come through [`Scripts`]).

/// Words that may precede the command itself and are not it.
const RESERVED: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "coproc",
];

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "posh",
];

/// How deep `bash -c "bash -c '…'"`, `$( $( … ) )` and scripts that run
/// scripts are followed.
const MAX_DEPTH: usize = 4;

/// A wrapper: a program that runs the command given after its own options.
struct Wrapper {
    name: &'static str,
    /// Options that take the next word as their value.
    with_value: &'static [&'static str],
    /// Positional words of its own before the command (`timeout 10 cmd`).
    own_positionals: usize,
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "sudo",
        with_value: &[
            "-u",
            "-g",
            "-C",
            "-D",
            "-h",
            "-p",
            "-r",
            "-t",
            "-T",
            "-U",
            "--user",
            "--group",
            "--close-from",
            "--chdir",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--command-timeout",
            "--other-user",
        ],
        own_positionals: 0,
    },
    Wrapper {
        name: "doas",
        with_value: &["-u", "-C"],
        own_positionals: 0,
    },
    Wrapper {
        name: "env",
        with_value: &[
            "-u",
            "--unset",
            "-C",
            "--chdir",
            "-S",
            "--split-string",
            "--block-signal",
            "--default-signal",
            "--ignore-signal",
        ],
        own_positionals: 0,
    },
    Wrapper {
        name: "command",
        with_value: &[],
        own_positionals: 0,
    },
    Wrapper {
        name: "builtin",
        with_value: &[],
        own_positionals: 0,
    },
    Wrapper {
        name: "exec",
        with_value: &["-a"],
        own_positionals: 0,
    },
    Wrapper {
        name: "time",
        with_value: &["-f", "--format", "-o", "--output"],
        own_positionals: 0,
    },
    Wrapper {
        name: "nohup",
        with_value: &[],
        own_positionals: 0,
    },
    Wrapper {
        name: "nice",
        with_value: &["-n", "--adjustment"],
        own_positionals: 0,
    },
    Wrapper {
        name: "ionice",
        with_value: &["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"],
        own_positionals: 0,
    },
    Wrapper {
        name: "timeout",
        with_value: &["-s", "--signal", "-k", "--kill-after"],
        own_positionals: 1,
    },
    Wrapper {
        name: "stdbuf",
        with_value: &["-i", "-o", "-e", "--input", "--output", "--error"],
        own_positionals: 0,
    },
    Wrapper {
        name: "xargs",
        with_value: &[
            "-I",
            "-n",
            "-L",
            "-s",
            "-P",
            "-d",
            "-E",
            "-a",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--max-lines",
            "--replace",
            "--eof",
        ],
        own_positionals: 0,
    },
    Wrapper {
        name: "setsid",
        with_value: &[],
        own_positionals: 0,
    },
    Wrapper {
        name: "unbuffer",
        with_value: &[],
        own_positionals: 0,
    },
    Wrapper {
        name: "chrt",
        with_value: &["-T", "-P", "-D"],
        own_positionals: 1,
    },
    Wrapper {
        name: "taskset",
        with_value: &[],
        own_positionals: 1,
    },
    Wrapper {
        name: "flock",
        with_value: &["-w", "--wait", "--timeout", "-E", "--conflict-exit-code"],
        own_positionals: 1,
    },
    Wrapper {
        name: "strace",
        with_value: &[
            "-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S", "-X",
        ],
        own_positionals: 0,
    },
    Wrapper {
        name: "ltrace",
        with_value: &[
            "-o", "-e", "-p", "-s", "-u", "-a", "-l", "-n", "-x", "-A", "-D", "-F",
        ],
        own_positionals: 0,
    },
    Wrapper {
        name: "runuser",
        with_value: &[
            "-u",
            "-g",
            "-G",
            "--user",
            "--group",
            "--supp-group",
            "-w",
            "--whitelist-environment",
        ],
        own_positionals: 0,
    },
    // Run a command with other credentials, limits, namespaces or root
    // (re-attack Y-1: `setpriv --reuid=0 -- git push` was not read).
    Wrapper {
        name: "setpriv",
        with_value: &[
            "--ruid",
            "--euid",
            "--reuid",
            "--rgid",
            "--egid",
            "--regid",
            "--groups",
            "--inh-caps",
            "--ambient-caps",
            "--bounding-set",
            "--securebits",
            "--pdeathsig",
            "--selinux-label",
            "--apparmor-profile",
            "--landlock-access",
            "--landlock-rule",
        ],
        own_positionals: 0,
    },
    Wrapper {
        name: "unshare",
        with_value: &[
            "-S",
            "--setuid",
            "-G",
            "--setgid",
            "-R",
            "--root",
            "-w",
            "--wd",
            "--map-user",
            "--map-group",
            "--map-users",
            "--map-groups",
            "--propagation",
            "--setgroups",
        ],
        own_positionals: 0,
    },
    Wrapper {
        name: "nsenter",
        with_value: &["-t", "--target", "-S", "--setuid", "-G", "--setgid"],
        own_positionals: 0,
    },
    Wrapper {
        name: "chroot",
        with_value: &["--userspec", "--groups"],
        own_positionals: 1,
    },
    Wrapper {
        name: "prlimit",
        with_value: &["-p", "--pid", "-o", "--output"],
        own_positionals: 0,
    },
    Wrapper {
        name: "setarch",
        with_value: &[],
        own_positionals: 1,
    },
    Wrapper {
        name: "numactl",
        with_value: &[
            "-i",
            "--interleave",
            "-N",
            "--cpunodebind",
            "-C",
            "--physcpubind",
            "-m",
            "--membind",
            "-p",
            "--preferred",
        ],
        own_positionals: 0,
    },
    Wrapper {
        name: "cgexec",
        with_value: &["-g"],
        own_positionals: 0,
    },
    Wrapper {
        name: "faketime",
        with_value: &["-m", "-f"],
        own_positionals: 1,
    },
    Wrapper {
        name: "systemd-run",
        with_value: &[
            "-p",
            "--property",
            "-u",
            "--unit",
            "-E",
            "--setenv",
            "-M",
            "--machine",
            "-H",
            "--host",
            "--uid",
            "--gid",
            "--nice",
            "-D",
            "--working-directory",
            "--slice",
            "--description",
            "--on-active",
            "--on-calendar",
        ],
        own_positionals: 0,
    },
    Wrapper {
        name: "fakeroot",
        with_value: &["-l", "--lib", "--faked", "-i", "-s"],
        own_positionals: 0,
    },
    Wrapper {
        name: "eatmydata",
        with_value: &[],
        own_positionals: 0,
    },
    Wrapper {
        name: "torsocks",
        with_value: &["-u", "-p", "-a", "-P"],
        own_positionals: 0,
    },
    Wrapper {
        name: "proxychains",
        with_value: &["-f"],
        own_positionals: 0,
    },
    Wrapper {
        name: "proxychains4",
        with_value: &["-f"],
        own_positionals: 0,
    },
    Wrapper {
        name: "dbus-run-session",
        with_value: &["--config-file", "--dbus-daemon"],
        own_positionals: 0,
    },
    Wrapper {
        name: "valgrind",
        with_value: &[],
        own_positionals: 0,
    },
    Wrapper {
        name: "busybox",
        with_value: &[],
        own_positionals: 0,
    },
    Wrapper {
        name: "npx",
        with_value: &[
            "-p",
            "--package",
            "--call",
            "--cache",
            "--registry",
            "--userconfig",
        ],
        own_positionals: 0,
    },
    Wrapper {
        name: "bunx",
        with_value: &["-p", "--package"],
        own_positionals: 0,
    },
];

/// Package-manager subcommands that run the command after them:
/// `npm exec -- npm publish`, `pnpm dlx …`, `yarn exec …`, `bun x …`.
const RUNNER_SUBCOMMANDS: &[(&str, &[&str])] = &[
    ("npm", &["exec", "x"]),
    ("pnpm", &["exec", "dlx", "x"]),
    ("yarn", &["exec", "dlx"]),
    ("bun", &["x"]),
];

/// Where a command runs: the start directory (the Bash tool's cwd) and the
/// `cd`/`pushd` arguments seen before it, in order. `unknown` after a
/// `cd -`, a `popd` or a `cd` to a computed place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cwd {
    pub cds: Vec<String>,
    pub unknown: bool,
}

/// What kind of redirection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `>& file`, `N>`: writes the target.
    Write,
    /// `<>`: opens the target for reading and writing (creating it).
    ReadWrite,
    /// `<`: reads the target.
    Read,
    /// `>&N`, `<&N`, `>&-`: duplicates a descriptor, no file.
    Duplicate,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub target: String,
}

/// One simple command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// Its words, without the redirections.
    pub words: Vec<String>,
    pub redirects: Vec<Redirect>,
    /// A here-document's or here-string's text: the command's input.
    pub stdin_text: Option<String>,
    pub cwd: Cwd,
}

/// A script file the text runs (`sh deploy.sh`, `./deploy.sh`, `source x`,
/// `sh < x`, `cat x | sh`): the reader asks a [`Scripts`] for its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptFile {
    pub path: String,
    pub cwd: Cwd,
    /// Run by a shell whatever its first line says (`sh x`, `source x`);
    /// otherwise only a shell script (a shell `#!`, or none) is read.
    pub by_shell: bool,
}

/// Where the text of a script file comes from (the disk, in the guard).
pub trait Scripts {
    fn read(&self, file: &ScriptFile) -> Option<String>;
}

/// No script files are read.
pub struct NoScripts;

impl Scripts for NoScripts {
    fn read(&self, _file: &ScriptFile) -> Option<String> {
        None
    }
}

/// Every simple command the text runs, as its words, in order; nested
/// scripts (`$(…)`, `sh -c`, `eval`, a shell fed on stdin) are included
/// after their parent. Script files are not read.
pub fn simple_commands(text: &str) -> Vec<Vec<String>> {
    commands(text, &NoScripts)
        .into_iter()
        .map(|command| command.words)
        .collect()
}

/// Every simple command the text runs, with its redirections, input and
/// working directory, nested scripts and script files included.
pub fn commands(text: &str, scripts: &dyn Scripts) -> Vec<Command> {
    let mut out = Vec::new();
    collect(text, &Cwd::default(), 0, scripts, &mut out);
    out
}

fn collect(text: &str, start: &Cwd, depth: usize, scripts: &dyn Scripts, out: &mut Vec<Command>) {
    let lexed = lex(text);
    let mut cwd = start.clone();
    let mut previous: Option<(Command, bool)> = None;
    for raw in lexed.commands {
        let command = Command {
            words: raw.words,
            redirects: raw.redirects,
            stdin_text: raw.stdin_text,
            cwd: cwd.clone(),
        };
        cwd = cwd_after(&command, &cwd);
        out.push(command.clone());
        if depth < MAX_DEPTH {
            let mut nested: Vec<String> = inner_scripts(&command.words);
            let mut files: Vec<ScriptFile> = script_file(&command).into_iter().collect();
            if reads_script_from_stdin(&command.words) {
                // `bash <<EOF … EOF`, `sh <<< 'x'`, `sh < deploy.sh`.
                nested.extend(command.stdin_text.clone());
                files.extend(
                    command
                        .redirects
                        .iter()
                        .filter(|r| r.kind == RedirectKind::Read)
                        .map(|r| ScriptFile {
                            path: r.target.clone(),
                            cwd: command.cwd.clone(),
                            by_shell: true,
                        }),
                );
                // `echo 'git push' | sh`, `cat <<EOF | bash`, `cat x.sh |
                // sh`: a shell reading its script from a pipe runs what the
                // command before it prints.
                if let Some((before, true)) = &previous {
                    nested.extend(printed_text(before));
                    files.extend(printed_files(before));
                }
            }
            for script in nested {
                // `bash -c "$(printf 'git push')"`: the script is what the
                // substitution prints.
                if let Some(printed) = printed_by_substitution(&script) {
                    collect(&printed, &command.cwd, depth + 1, scripts, out);
                }
                collect(&script, &command.cwd, depth + 1, scripts, out);
            }
            for file in files {
                if let Some(script) = scripts.read(&file) {
                    collect(&script, &command.cwd, depth + 1, scripts, out);
                }
            }
        }
        previous = Some((command, raw.piped));
    }
    if depth < MAX_DEPTH {
        for substitution in lexed.substitutions {
            collect(&substitution, &cwd, depth + 1, scripts, out);
        }
    }
}

/// The working directory after `command`: changed by `cd`/`pushd`/`popd`.
fn cwd_after(command: &Command, before: &Cwd) -> Cwd {
    let rest = command_part(&command.words);
    let Some(name) = rest.first().map(|w| basename(w)) else {
        return before.clone();
    };
    let mut after = before.clone();
    match name {
        "cd" | "pushd" => {
            let target = rest[1..]
                .iter()
                .find(|w| !(w.starts_with('-') && w.len() > 1) || *w == "--")
                .filter(|w| *w != "--")
                .cloned();
            match target.as_deref() {
                None => after.cds.push("~".into()),
                Some("-") => after.unknown = true,
                Some(dir) if dir.contains('$') && !known_expansion(dir) => after.unknown = true,
                Some(dir) => after.cds.push(dir.to_string()),
            }
        }
        "popd" => after.unknown = true,
        _ => {}
    }
    after
}

/// Whether a word's `$…` parts are ones the guard can expand.
fn known_expansion(word: &str) -> bool {
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        let after = &rest[at..];
        let known = [
            "$HOME",
            "${HOME}",
            "$PWD",
            "${PWD}",
            "$(pwd)",
            "$CLAUDE_PROJECT_DIR",
            "${CLAUDE_PROJECT_DIR}",
        ]
        .iter()
        .find(|k| after.starts_with(**k));
        match known {
            Some(k) => rest = &after[k.len()..],
            None => return false,
        }
    }
    true
}

/// Scripts a simple command hands to a shell as text: `sh -c SCRIPT`,
/// `bash <<< SCRIPT` (through `stdin_text`), `eval WORDS…`, `sudo -s WORDS`,
/// `env -S STRING`, `su -c SCRIPT`, `runuser … -c`, `script -c`, `flock
/// … -c`, `watch WORDS…`, `npx -c SCRIPT`, `npm exec -c SCRIPT`.
fn inner_scripts(words: &[String]) -> Vec<String> {
    let mut scripts = Vec::new();
    // Wrappers that take a script as an option value, before command_part
    // steps over them.
    let mut index = 0;
    while index < words.len() {
        let word = words[index].as_str();
        if RESERVED.contains(&word) || is_assignment(word) {
            index += 1;
            continue;
        }
        let name = basename(word);
        match name {
            "env" => {
                // The string is split into `env`'s own arguments, options
                // included (`env -S "-C sub git st"` is `env -C sub git st`).
                for (at, option) in words.iter().enumerate().skip(index + 1) {
                    if let Some(value) = option
                        .strip_prefix("--split-string=")
                        .or_else(|| option.strip_prefix("-S").filter(|v| !v.is_empty()))
                    {
                        scripts.push(format!("env {value}"));
                    } else if (option == "-S" || option == "--split-string")
                        && let Some(value) = words.get(at + 1)
                    {
                        scripts.push(format!("env {value}"));
                    }
                }
            }
            "sudo" | "doas" => {
                let shell_mode = words[index + 1..]
                    .iter()
                    .take_while(|w| w.starts_with('-'))
                    .any(|w| {
                        matches!(w.as_str(), "-s" | "-i" | "--shell" | "--login")
                            || (!w.starts_with("--")
                                && (w.contains('s') || w.contains('i'))
                                && w.len() <= 4)
                    });
                if shell_mode {
                    let rest = command_part(&words[index..]);
                    if !rest.is_empty() {
                        scripts.push(rest.join(" "));
                    }
                }
            }
            "su" | "runuser" | "script" | "flock" | "sg" => {
                for (at, option) in words.iter().enumerate().skip(index + 1) {
                    // `-c` alone or last of a bundle (`script -qc …`,
                    // `su -lc …`: re-attack Y-1).
                    let bundled_c = last_short_option(option) == Some('c');
                    if let Some(value) = option.strip_prefix("--command=") {
                        scripts.push(value.to_string());
                    } else if (bundled_c || option == "--command")
                        && let Some(value) = words.get(at + 1)
                    {
                        scripts.push(value.clone());
                    }
                }
                // `sg GROUP COMMAND`: the command is one word, run by
                // `/bin/sh -c`.
                if name == "sg" {
                    let rest: Vec<&String> = words[index + 1..]
                        .iter()
                        .filter(|w| w.as_str() != "-")
                        .collect();
                    if rest.len() == 2 && !rest[1].starts_with('-') {
                        scripts.push(rest[1].clone());
                    }
                }
            }
            "npx" | "npm" | "pnpm" | "yarn" | "bun" => {
                let runs_command = name == "npx"
                    || RUNNER_SUBCOMMANDS.iter().any(|(program, subcommands)| {
                        *program == name
                            && words
                                .get(index + 1)
                                .is_some_and(|w| subcommands.contains(&w.as_str()))
                    });
                if !runs_command {
                    break;
                }
                for (at, option) in words.iter().enumerate().skip(index + 1) {
                    if let Some(value) = option.strip_prefix("--call=") {
                        scripts.push(value.to_string());
                    } else if (option == "-c" || option == "--call")
                        && let Some(value) = words.get(at + 1)
                    {
                        scripts.push(value.clone());
                    }
                }
            }
            "watch" => {
                let mut at = index + 1;
                while at < words.len() && words[at].starts_with('-') {
                    if matches!(words[at].as_str(), "-n" | "--interval" | "-q" | "--equexit") {
                        at += 1;
                    }
                    at += 1;
                }
                if at < words.len() {
                    scripts.push(words[at..].join(" "));
                }
            }
            _ => {}
        }
        break;
    }
    let rest = command_part(words);
    let Some(first) = rest.first() else {
        return scripts;
    };
    let name = basename(first);
    if name == "eval" {
        scripts.push(rest[1..].join(" "));
        return scripts;
    }
    if SHELLS.contains(&name)
        && let ShellMode::Command(script) = shell_mode(&rest[1..])
    {
        scripts.push(script);
    }
    scripts
}

/// How a shell was asked to run.
#[derive(Debug)]
enum ShellMode {
    /// `-c SCRIPT`.
    Command(String),
    /// A script file, then its arguments.
    File(String),
    /// No script given: commands come from stdin.
    Stdin,
}

/// Reads a shell's own arguments: option clusters (`-ec`, `+x`), options
/// with a value (`-o pipefail`, `-O extglob`, `--rcfile F`), `--`.
fn shell_mode(args: &[String]) -> ShellMode {
    let mut command_flag = false;
    let mut stdin_flag = false;
    let mut index = 0;
    while index < args.len() {
        let word = args[index].as_str();
        if word == "--" || word == "-" {
            index += 1;
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            if matches!(long, "rcfile" | "init-file") {
                index += 1;
            }
            index += 1;
            continue;
        }
        if (word.starts_with('-') || word.starts_with('+')) && word.len() > 1 {
            let flags = &word[1..];
            if flags.contains('c') && word.starts_with('-') {
                command_flag = true;
            }
            if flags.contains('s') && word.starts_with('-') {
                stdin_flag = true;
            }
            // `-o OPTION`, `-O SHOPT`: the value is the next word.
            let takes_value = flags.ends_with('o') || flags.ends_with('O');
            index += if takes_value { 2 } else { 1 };
            continue;
        }
        break;
    }
    match args.get(index) {
        Some(first) if command_flag => ShellMode::Command(first.clone()),
        _ if stdin_flag => ShellMode::Stdin,
        Some(first) => ShellMode::File(first.clone()),
        None => ShellMode::Stdin,
    }
}

/// `sh`, `bash -s`, `bash -x` …: a shell given no script (no `-c`, no
/// script file), which reads its commands from stdin.
fn reads_script_from_stdin(words: &[String]) -> bool {
    let rest = command_part(words);
    let Some(name) = rest.first() else {
        return false;
    };
    SHELLS.contains(&basename(name)) && matches!(shell_mode(&rest[1..]), ShellMode::Stdin)
}

/// The script file a command runs, if any: `sh x.sh`, `bash -e x.sh`,
/// `source x`, `. x`, `./x.sh`, `/path/to/x`.
fn script_file(command: &Command) -> Option<ScriptFile> {
    let rest = command_part(&command.words);
    let first = rest.first()?;
    let name = basename(first);
    let (path, by_shell) = if SHELLS.contains(&name) {
        match shell_mode(&rest[1..]) {
            ShellMode::File(path) => (path, true),
            _ => return None,
        }
    } else if name == "source" || first == "." {
        (rest.get(1)?.clone(), true)
    } else if first.contains('/') && !SHELLS.contains(&name) {
        (first.clone(), false)
    } else {
        return None;
    };
    Some(ScriptFile {
        path,
        cwd: command.cwd.clone(),
        by_shell,
    })
}

/// What `echo …` / `printf …` / `cat <<EOF` prints, as far as it can be known.
fn printed_text(command: &Command) -> Option<String> {
    let rest = command_part(&command.words);
    let name = basename(rest.first()?);
    let args: Vec<&str> = rest[1..]
        .iter()
        .map(String::as_str)
        .skip_while(|w| name == "echo" && w.starts_with('-'))
        .collect();
    match name {
        "echo" | "printf" => Some(args.join(" ").replace("\\n", "\n")),
        "cat" if args.is_empty() => command.stdin_text.clone(),
        _ => None,
    }
}

/// What a word that is one `$(echo …)` / `$(printf …)` prints.
fn printed_by_substitution(word: &str) -> Option<String> {
    let body = word.strip_prefix("$(")?.strip_suffix(')')?;
    let lexed = lex(body);
    let [only] = lexed.commands.as_slice() else {
        return None;
    };
    let command = Command {
        words: only.words.clone(),
        redirects: only.redirects.clone(),
        stdin_text: only.stdin_text.clone(),
        cwd: Cwd::default(),
    };
    printed_text(&command)
}

/// The files `cat FILE… | sh` feeds a shell.
fn printed_files(command: &Command) -> Vec<ScriptFile> {
    let rest = command_part(&command.words);
    if rest.first().map(|w| basename(w)) != Some("cat") {
        return Vec::new();
    }
    rest[1..]
        .iter()
        .filter(|w| !w.starts_with('-'))
        .map(|path| ScriptFile {
            path: path.clone(),
            cwd: command.cwd.clone(),
            by_shell: true,
        })
        .collect()
}

/// The words from the command name on: leading assignments, reserved
/// words, wrappers (with their own options and positionals) and package
/// runners (`npx`, `npm exec --`, `pnpm dlx`, …) are stepped over. A
/// `command -v NAME` runs nothing and gives an empty slice.
pub fn command_part(words: &[String]) -> &[String] {
    let mut index = 0;
    while index < words.len() {
        let word = words[index].as_str();
        if is_assignment(word) {
            index += 1;
            continue;
        }
        if word == "coproc" {
            index += 1;
            // `coproc NAME { cmd; }`: the name is not the command.
            if words.get(index + 1).is_some_and(|w| w == "{") {
                index += 2;
            }
            continue;
        }
        if word == "time" || RESERVED.contains(&word) {
            index += 1;
            if word == "time" {
                while words.get(index).is_some_and(|w| w == "-p" || w == "--") {
                    index += 1;
                }
            }
            continue;
        }
        let name = basename(word);
        if let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == name) {
            index += 1;
            let mut positionals = wrapper.own_positionals;
            while index < words.len() {
                let option = words[index].as_str();
                if option == "--" {
                    index += 1;
                    break;
                }
                if name == "command" && (option == "-v" || option == "-V") {
                    return &words[words.len()..];
                }
                if name == "nice" && option.len() > 1 && option[1..].parse::<i32>().is_ok() {
                    index += 1;
                    continue;
                }
                if option.starts_with('-') && option.len() > 1 {
                    index += 1;
                    // A bundle of one-letter options (`env -iC DIR`)
                    // takes a value when its last letter does.
                    let bundle_ends_with_value = last_short_option(option).is_some_and(|last| {
                        wrapper.with_value.contains(&format!("-{last}").as_str())
                    });
                    let takes_value = wrapper.with_value.contains(&option)
                        || bundle_ends_with_value
                        // `exec -la NAME cmd`: bash's one-letter options
                        // bundle, and `a` takes the next word as argv[0].
                        || (name == "exec" && !option.starts_with("--") && option.contains('a'));
                    if takes_value && index < words.len() {
                        index += 1;
                    }
                    continue;
                }
                if is_assignment(option) && matches!(name, "env" | "sudo" | "doas") {
                    index += 1;
                    continue;
                }
                if positionals > 0 {
                    positionals -= 1;
                    index += 1;
                    continue;
                }
                break;
            }
            continue;
        }
        if let Some((_, subcommands)) = RUNNER_SUBCOMMANDS.iter().find(|(p, _)| *p == name)
            && words
                .get(index + 1)
                .is_some_and(|w| subcommands.contains(&w.as_str()))
        {
            index += 2;
            while index < words.len() {
                let option = words[index].as_str();
                if option == "--" {
                    index += 1;
                    break;
                }
                if !option.starts_with('-') {
                    break;
                }
                index += 1;
                if matches!(
                    option,
                    "-p" | "--package" | "-c" | "--call" | "-w" | "--workspace"
                ) && index < words.len()
                {
                    index += 1;
                }
            }
            continue;
        }
        break;
    }
    &words[index.min(words.len())..]
}

/// The last letter of a word of one-letter options (`-c`, `-qc`, `-iC`),
/// which is the one that may take the next word as its value.
fn last_short_option(word: &str) -> Option<char> {
    let letters = word
        .strip_prefix('-')
        .filter(|rest| !rest.starts_with('-'))?;
    if letters.is_empty() || !letters.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    letters.chars().last()
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let name = name.strip_suffix('+').unwrap_or(name);
            !name.is_empty()
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Programs that take their words as text to print, search or define,
/// not as a command to run: a `git` among their words is not a command
/// (`echo git push`, `grep -r git push`, `type git`).
pub const TAKES_WORDS_AS_TEXT: &[&str] = &[
    "echo", "printf", "print", "grep", "egrep", "fgrep", "rg", "ag", "ack", "man", "info", "help",
    "whatis", "apropos", "tldr", "type", "which", "whereis", "hash", "alias", "unalias", "export",
    "declare", "typeset", "local", "readonly", "read", "test", "[", "[[", "true", "false", ":",
    "git", "complete", "compgen",
];

pub fn basename(word: &str) -> &str {
    word.rsplit(['/', '\\']).next().unwrap_or(word)
}

/// Global options that take a value in the next word, by program. Any other
/// word starting with `-` before the subcommand is a flag on its own.
const GLOBAL_OPTIONS_WITH_VALUE: &[(&str, &[&str])] = &[
    (
        "git",
        &[
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--super-prefix",
            "--config-env",
            "--list-cmds",
        ],
    ),
    ("cargo", &["-C", "-Z", "--color", "--config"]),
    (
        "npm",
        &[
            "-C",
            "-w",
            "--prefix",
            "--registry",
            "--userconfig",
            "--globalconfig",
            "--cache",
            "--loglevel",
            "--otp",
            "--tag",
            "--access",
            "--workspace",
        ],
    ),
    (
        "pnpm",
        &[
            "-C",
            "--dir",
            "-w",
            "--filter",
            "-F",
            "--registry",
            "--reporter",
        ],
    ),
    ("yarn", &["--cwd", "--registry"]),
    ("bun", &["--cwd", "--registry", "-c", "--config"]),
    ("gh", &["-R", "--repo", "--hostname"]),
];

/// A simple command as the risky-command globs see it: the program by its
/// name whatever its path, then its subcommand and arguments, with the
/// program's own global options before the subcommand left out.
/// `/usr/bin/git -C . --no-pager push` is `git push`, `cargo +nightly
/// publish` is `cargo publish`. `None` for an empty command.
pub fn canonical_command(words: &[String]) -> Option<String> {
    let rest = command_part(words);
    let name = basename(rest.first()?);
    let mut out = vec![name.to_string()];
    let mut index = 1;
    if let Some((_, with_value)) = GLOBAL_OPTIONS_WITH_VALUE.iter().find(|(p, _)| *p == name) {
        while index < rest.len() {
            let word = rest[index].as_str();
            if word == "--" {
                index += 1;
                break;
            }
            let is_option = word.starts_with('-') && word.len() > 1;
            let is_toolchain = name == "cargo" && word.starts_with('+');
            if !is_option && !is_toolchain {
                break;
            }
            index += 1;
            if with_value.contains(&word) {
                index += 1;
            }
        }
    }
    out.extend(rest.iter().skip(index).cloned());
    Some(out.join(" "))
}

/// git's own commands, which an alias cannot hide (git ignores an alias
/// named like one): the common ones, so that only an unknown subcommand is
/// looked up as an alias.
const GIT_COMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-ref-format",
    "checkout",
    "cherry",
    "cherry-pick",
    "citool",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fast-export",
    "fast-import",
    "fetch",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "gui",
    "hash-object",
    "help",
    "init",
    "instaweb",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-tree",
    "mergetool",
    "mktree",
    "mv",
    "name-rev",
    "notes",
    "pack-refs",
    "patch-id",
    "prune",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "reflog",
    "remote",
    "repack",
    "replace",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "update-index",
    "update-ref",
    "var",
    "verify-commit",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// The aliases a Bash text defines for its later `git` commands (`git
/// config [options] alias.NAME VALUE`, `git config set …`; keys in any
/// case).
#[derive(Debug, Clone, Default)]
pub struct GitSetup {
    pub aliases: Vec<(String, String)>,
    /// Variables that change which config git reads, exported by the text
    /// for its later commands (`export GIT_DIR=…`, `declare -x HOME=…`, an
    /// assignment after `set -a`).
    pub env: Vec<(String, String)>,
}

pub fn git_setup(commands: &[Command]) -> GitSetup {
    let mut setup = GitSetup::default();
    let mut export_all = false;
    // Values assigned in the shell, and names exported with or without one
    // (`GIT_DIR=…; export GIT_DIR`, `export GIT_DIR; GIT_DIR=…`).
    let mut assigned: Vec<(String, String)> = Vec::new();
    let mut exported: Vec<String> = Vec::new();
    for command in commands {
        // `{ export …; }`, `if …; then export …; fi`: the reserved words
        // are not the command.
        let start = command
            .words
            .iter()
            .position(|word| !RESERVED.contains(&word.as_str()))
            .unwrap_or(command.words.len());
        let words = &command.words[start..];
        let first = words.first().map(String::as_str);
        let exporting = match first {
            Some("export") => true,
            Some("declare" | "typeset" | "local" | "readonly") => words
                .iter()
                .skip(1)
                .take_while(|w| w.starts_with('-'))
                .any(|w| w.contains('x')),
            Some("set") => {
                if words.iter().skip(1).any(|w| {
                    w == "-a" || (w.starts_with('-') && !w.starts_with("--") && w.contains('a'))
                }) || words
                    .windows(2)
                    .any(|w| w[0] == "-o" && w[1] == "allexport")
                {
                    export_all = true;
                }
                false
            }
            _ => false,
        };
        let bare = !words.is_empty() && words.iter().all(|w| is_assignment(w));
        for word in words.iter().skip(usize::from(exporting)) {
            match word.split_once('=') {
                Some((key, value)) if is_assignment(word) && config_variable(key) => {
                    if bare || exporting {
                        assigned.push((key.to_string(), value.to_string()));
                    }
                    if exporting || export_all {
                        exported.push(key.to_string());
                    }
                }
                None if exporting && config_variable(word) => exported.push(word.clone()),
                _ => {}
            }
        }
        let rest = command_part(&command.words);
        if rest.first().is_none_or(|name| basename(name) != "git") {
            continue;
        }
        let Some(config) = rest.iter().position(|word| word == "config") else {
            continue;
        };
        let args = &rest[config + 1..];
        for (at, word) in args.iter().enumerate() {
            if let Some(name) = word.to_ascii_lowercase().strip_prefix("alias.")
                && let Some(value) = args.get(at + 1)
            {
                setup.aliases.push((name.to_string(), value.clone()));
            }
        }
    }
    for (key, value) in assigned.iter().rev() {
        if exported.contains(key) && !setup.env.iter().any(|(k, _)| k == key) {
            setup.env.push((key.clone(), value.clone()));
        }
    }
    setup
}

/// How the config a `git` command sees differs from the hook's: its
/// global options (`-c`, `-C`, `--config-env`, …) and the environment it
/// sets in front of it, for a lookup that asks git as the command would.
pub struct GitContext<'a> {
    pub options: &'a [String],
    pub env: Vec<(&'a str, &'a str)>,
}

/// An environment variable that changes which config git reads.
fn config_variable(key: &str) -> bool {
    key.starts_with("GIT_CONFIG")
        || matches!(
            key,
            "HOME" | "XDG_CONFIG_HOME" | "GIT_DIR" | "GIT_WORK_TREE"
        )
}

/// A `git` command whose subcommand is an alias, spelled out: `git -c
/// alias.p=push p origin` is `git push origin`, a `!` alias is its shell
/// text. The alias comes from the command's own `-c` (any case: config
/// keys ignore it), `--config-env` and `GIT_CONFIG_KEY_n`, then `setup`
/// (earlier in the same text), then `from_config` (git asked for a key in
/// the command's own context, only for a subcommand git does not have).
/// A subcommand that is neither an alias nor one of git's commands
/// (`is_command`, asked last) is taken for a push: git would fail on it,
/// unless it guesses (`help.autocorrect`: `git pusj` is `git push`) or
/// reads an alias this reading cannot see (an include, a key built from a
/// variable, `HOME=`). `None` when the subcommand is git's own.
pub fn git_alias_expanded(
    words: &[String],
    cwd: &Cwd,
    setup: &GitSetup,
    from_config: &dyn Fn(&GitContext, &str) -> Option<String>,
    is_command: &dyn Fn(&GitContext, &str) -> bool,
) -> Option<String> {
    let rest = command_part(words);
    if rest.first().is_none_or(|name| basename(name) != "git") {
        return None;
    }
    let env: Vec<(&str, &str)> = words[..words.len() - rest.len()]
        .iter()
        .filter_map(|word| word.split_once('='))
        .collect();
    let env_value = |name: &str| env.iter().find(|(key, _)| *key == name).map(|(_, v)| *v);
    let mut inline: Vec<(String, String)> = Vec::new();
    // Where the command runs: each `cd`/`pushd` before it is a `-C` for
    // the lookups (re-attack Y-2: `cd sub && git st` read `st` from the
    // project's config, not from `sub`'s).
    let mut options: Vec<String> = Vec::new();
    if !cwd.unknown {
        for dir in &cwd.cds {
            options.push("-C".to_string());
            options.push(dir.clone());
        }
    }
    // A wrapper's own change of folder (`env -C sub`, `unshare --wd=sub`:
    // the re-check of Y-2).
    for dir in wrapper_chdirs(&words[..words.len() - rest.len()]) {
        options.push("-C".to_string());
        options.push(dir);
    }
    let takes_value = [
        "-c",
        "--config-env",
        "-C",
        "--git-dir",
        "--work-tree",
        "--namespace",
    ];
    let mut index = 1;
    while let Some(word) = rest.get(index) {
        let (option, value) = match word.split_once('=') {
            Some((option, value)) if option.starts_with("--") && takes_value.contains(&option) => {
                (option, Some(value.to_string()))
            }
            _ => (word.as_str(), None),
        };
        if !option.starts_with('-') {
            break;
        }
        let value = match value {
            Some(value) => Some(value),
            None if takes_value.contains(&option) => {
                index += 1;
                rest.get(index).cloned()
            }
            None => None,
        };
        index += 1;
        let Some(value) = value else {
            continue;
        };
        // Only what decides which config git reads goes to the lookups
        // (never `--exec-path` and the like: the hook runs them).
        if matches!(
            option,
            "-c" | "--config-env" | "-C" | "--git-dir" | "--work-tree"
        ) {
            options.push(option.to_string());
            options.push(value.clone());
        }
        if !matches!(option, "-c" | "--config-env") {
            continue;
        }
        let (key, setting) = value.split_once('=').unwrap_or((&value, ""));
        if let Some(name) = key.to_ascii_lowercase().strip_prefix("alias.") {
            // `--config-env=alias.p=VAR`: VAR's value, which this reading
            // sees only when the same text sets it.
            let setting = match option {
                "-c" => Some(setting.to_string()),
                _ => env_value(setting).map(str::to_string),
            };
            if let Some(setting) = setting {
                inline.push((name.to_string(), setting));
            }
        }
    }
    let mut subcommand = rest.get(index)?.clone();
    let args = &rest[index + 1..];
    let count: usize = env_value("GIT_CONFIG_COUNT")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    // Likewise only the variables that say where config is read: the hook
    // must not run git under the command's `LD_PRELOAD`.
    // What earlier commands exported, then the command's own, which win.
    let exported = setup
        .env
        .iter()
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .filter(|(key, _)| !env.iter().any(|(own, _)| own == key));
    let context = GitContext {
        options: &options,
        env: exported
            .chain(env.iter().copied())
            .filter(|(key, _)| config_variable(key))
            .collect(),
    };
    let lookup = |name: &str| -> Option<String> {
        let name = name.to_ascii_lowercase();
        let key = format!("alias.{name}");
        inline
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .or_else(|| {
                (0..count.min(64)).rev().find_map(|n| {
                    env_value(&format!("GIT_CONFIG_KEY_{n}"))
                        .is_some_and(|k| k.eq_ignore_ascii_case(&key))
                        .then(|| env_value(&format!("GIT_CONFIG_VALUE_{n}")).unwrap_or(""))
                        .map(str::to_string)
                })
            })
            .or_else(|| {
                setup
                    .aliases
                    .iter()
                    .rev()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.clone())
            })
            .or_else(|| from_config(&context, &key))
    };
    // An alias's value may carry arguments (`lg = log --oneline`): they
    // come before the command's own.
    let mut lead: Vec<String> = Vec::new();
    let spelled = |subcommand: &str, lead: &[String]| {
        let mut text = format!("git {subcommand}");
        for arg in lead.iter().chain(args) {
            text.push(' ');
            text.push_str(arg);
        }
        text
    };
    let mut expanded = false;
    // An alias may name another (git follows them, refusing loops).
    for _ in 0..5 {
        if GIT_COMMANDS.contains(&subcommand.as_str()) {
            return expanded.then(|| spelled(&subcommand, &lead));
        }
        let Some(value) = lookup(&subcommand) else {
            break;
        };
        expanded = true;
        if let Some(shell) = value.strip_prefix('!') {
            let mut text = shell.trim().to_string();
            for arg in lead.iter().chain(args) {
                text.push(' ');
                text.push_str(arg);
            }
            return Some(text);
        }
        let mut parts = value.split_whitespace().map(str::to_string);
        let Some(first) = parts.next() else {
            break;
        };
        let mut more: Vec<String> = parts.collect();
        more.append(&mut lead);
        lead = more;
        subcommand = first;
    }
    // A subcommand held in a variable is out of this reading's sight like
    // any command name in one (the module doc): the check after the
    // command sees what it did.
    if subcommand.starts_with('-')
        || subcommand.contains(['$', '`'])
        || is_command(&context, &subcommand)
    {
        return expanded.then(|| spelled(&subcommand, &lead));
    }
    Some(format!(
        "{} (`{subcommand}` is none of git's commands and no alias this reading can see: \
         git may run a push for it)",
        spelled("push", &lead)
    ))
}

/// The folders wrappers among `prefix` change to before they run the
/// command: `env -C DIR`/`--chdir`, `unshare`/`nsenter` `-w DIR`/`--wd`,
/// `systemd-run --working-directory`, `sudo -D DIR`/`--chdir`.
fn wrapper_chdirs(prefix: &[String]) -> Vec<String> {
    let mut dirs = Vec::new();
    let mut wrapper = "";
    let mut index = 0;
    while index < prefix.len() {
        let word = prefix[index].as_str();
        let name = basename(word);
        if WRAPPERS.iter().any(|w| w.name == name) && !word.starts_with('-') {
            wrapper = name;
            index += 1;
            continue;
        }
        let (short, long): (Option<char>, &[&str]) = match wrapper {
            "env" => (Some('C'), &["--chdir"]),
            "unshare" | "nsenter" => (Some('w'), &["--wd"]),
            "systemd-run" => (None, &["--working-directory"]),
            "sudo" => (Some('D'), &["--chdir"]),
            _ => (None, &[]),
        };
        if long.contains(&word) {
            if let Some(dir) = prefix.get(index + 1) {
                dirs.push(dir.clone());
            }
            index += 2;
            continue;
        }
        // The letter alone or in a bundle (`env -iC sub`), its value
        // joined (`env -Csub`, `unshare -wsub`) or the next word.
        if let Some(letter) = short
            && word.len() > 1
            && word.starts_with('-')
            && !word.starts_with("--")
            && let Some(at) = word.find(letter)
        {
            let joined = &word[at + letter.len_utf8()..];
            if joined.is_empty() {
                if let Some(dir) = prefix.get(index + 1) {
                    dirs.push(dir.clone());
                }
                index += 2;
            } else {
                dirs.push(joined.to_string());
                index += 1;
            }
            continue;
        }
        if let Some((option, dir)) = word.split_once('=')
            && long.contains(&option)
        {
            dirs.push(dir.to_string());
        }
        index += 1;
    }
    dirs
}

/// A command as git would see it when its program name is not what runs:
/// `exec -a git-push git origin` (bash sets `argv[0]`, and git acts on the
/// name it is called by) is `git-push origin`; a `git-…` program whose name
/// is built at run time (`./git-$n`, `git-p$(echo ush)`) is taken for
/// `git-push`, this reading cannot tell which it is. `None` otherwise.
pub fn git_program_as_named(words: &[String]) -> Option<String> {
    let start = words.iter().position(|word| !is_assignment(word))?;
    let words = &words[start..];
    if words.first().is_some_and(|word| word == "exec") {
        let mut index = 1;
        let mut name: Option<&str> = None;
        while let Some(word) = words.get(index) {
            if word == "--" {
                index += 1;
                break;
            }
            if !word.starts_with('-') || word.len() < 2 {
                break;
            }
            index += 1;
            if word.contains('a') {
                name = words.get(index).map(String::as_str);
                index += 1;
            }
        }
        words.get(index)?;
        let name = basename(name?);
        // Whatever program it is (a copy of git under another name acts on
        // the name it is called by just the same).
        if name.starts_with("git-") {
            let mut text = name.to_string();
            for arg in &words[index + 1..] {
                text.push(' ');
                text.push_str(arg);
            }
            return Some(text);
        }
        return None;
    }
    let program = basename(words.first()?);
    if program.starts_with("git-") && program.contains(['$', '`', '*', '?', '[']) {
        let mut text = "git-push".to_string();
        for arg in &words[1..] {
            text.push(' ');
            text.push_str(arg);
        }
        text.push_str(" (a git program whose name is built at run time)");
        return Some(text);
    }
    None
}

/// How a write target is affected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// Written, replaced, moved or removed, with everything under it.
    Written,
    /// The file a new link (symbolic or hard) points at: a handle on it.
    LinkedTo,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// As written (unexpanded; a glob stays a glob).
    pub path: String,
    pub kind: TargetKind,
}

fn written(path: &str) -> Target {
    Target {
        path: path.to_string(),
        kind: TargetKind::Written,
    }
}

/// A program's options that take a value, so the value is not taken for a
/// path; `None` for programs this reader does not know as writers.
fn writer_options(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "rm" | "unlink" | "rmdir" | "shred" => {
            &["-n", "--iterations", "-s", "--size", "--random-source"]
        }
        "tee" => &["--output-error"],
        "touch" => &["-d", "--date", "-r", "--reference", "-t"],
        "truncate" => &["-s", "--size", "-r", "--reference", "-o"],
        "sed" => &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
        "perl" => &["-e", "-E", "-M", "-I", "-x"],
        "cp" | "mv" | "install" | "ln" => &[
            "-S",
            "--suffix",
            "-m",
            "--mode",
            "-o",
            "--owner",
            "-g",
            "--group",
            "--backup",
            "-Z",
            "--context",
            "--sparse",
            "--reflink",
        ],
        "rsync" => &[
            "-e",
            "--rsh",
            "--exclude",
            "--include",
            "--filter",
            "-f",
            "--chmod",
            "--chown",
            "-T",
            "--temp-dir",
            "--backup-dir",
            "--suffix",
            "--files-from",
            "--exclude-from",
            "--include-from",
        ],
        "chmod" | "chown" | "chgrp" => &["--reference"],
        _ => return None,
    })
}

/// Splits `rest[1..]` into options and positionals for a writer: short
/// clusters (`-rf`, `-Ei`), `--opt=value`, options with a value, `--`.
/// Returns (flags as single letters or long names, positionals, `-t DIR`).
fn split_args(rest: &[String], with_value: &[&str]) -> (Vec<String>, Vec<String>, Option<String>) {
    let mut flags = Vec::new();
    let mut positionals = Vec::new();
    let mut target_dir = None;
    let mut index = 1;
    let mut options_done = false;
    while index < rest.len() {
        let word = &rest[index];
        index += 1;
        if options_done || word == "-" || !word.starts_with('-') {
            positionals.push(word.clone());
            continue;
        }
        if word == "--" {
            options_done = true;
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            if name == "target-directory" {
                target_dir = value.or_else(|| {
                    index += 1;
                    rest.get(index - 1).cloned()
                });
                continue;
            }
            if value.is_none() && with_value.contains(&word.as_str()) {
                index += 1;
            }
            flags.push(name.to_string());
            continue;
        }
        // A cluster: each letter a flag, until one that takes a value (the
        // rest of the cluster, or the next word).
        let letters: Vec<char> = word[1..].chars().collect();
        for (at, letter) in letters.iter().enumerate() {
            let option = format!("-{letter}");
            if *letter == 't' && with_value.contains(&"-S") {
                // cp/mv/install/ln `-t DIR`.
                let attached: String = letters[at + 1..].iter().collect();
                target_dir = if attached.is_empty() {
                    index += 1;
                    rest.get(index - 1).cloned()
                } else {
                    Some(attached)
                };
                break;
            }
            if with_value.contains(&option.as_str()) {
                flags.push(letter.to_string());
                if at + 1 == letters.len() {
                    index += 1;
                }
                break;
            }
            flags.push(letter.to_string());
        }
    }
    (flags, positionals, target_dir)
}

/// Paths a simple command writes, moves, removes or links to, as written:
/// redirection targets, and the files of `tee`, `sed -i`/`perl -i`, `cp`,
/// `mv`, `install`, `rsync` (destination; a directory destination or `-t
/// DIR` names `DIR/<source name>`), `ln`/`ln -s` (the new link, and what it
/// points at), `rm`, `rmdir`, `unlink`, `truncate`, `shred`, `touch`,
/// `chmod`/`chown`, `dd of=`, `git rm|mv|checkout|restore` paths, and the
/// whole tree of `git clean -x` and `git stash -u|-a`.
/// `is_dir` tells whether a destination (as written) is a directory now.
pub fn write_targets(command: &Command, is_dir: &dyn Fn(&str) -> bool) -> Vec<Target> {
    let mut targets: Vec<Target> = command
        .redirects
        .iter()
        .filter(|r| matches!(r.kind, RedirectKind::Write | RedirectKind::ReadWrite))
        .map(|r| written(&r.target))
        .collect();
    let rest = command_part(&command.words);
    let Some(name) = rest.first().map(|w| basename(w)) else {
        return targets;
    };
    if name == "git" {
        targets.extend(git_targets(rest));
        return targets;
    }
    if name == "dd" {
        targets.extend(
            rest[1..]
                .iter()
                .filter_map(|w| w.strip_prefix("of="))
                .map(written),
        );
        return targets;
    }
    let Some(with_value) = writer_options(name) else {
        return targets;
    };
    let (flags, positionals, target_dir) = split_args(rest, with_value);
    let has = |flag: &str| flags.iter().any(|f| f == flag);
    match name {
        "tee" | "rm" | "unlink" | "rmdir" | "truncate" | "shred" | "touch" => {
            targets.extend(positionals.iter().map(|p| written(p)));
        }
        "chmod" | "chown" | "chgrp" => {
            // The first positional is the mode or owner.
            targets.extend(positionals.iter().skip(1).map(|p| written(p)));
        }
        "sed" | "perl" => {
            let in_place = has("i") || flags.iter().any(|f| f.starts_with("in-place"));
            if in_place {
                // Without -e/-f the first positional is sed's script.
                let script_given = has("e")
                    || has("f")
                    || has("expression")
                    || has("file")
                    || has("E") && name == "perl";
                let skip = usize::from(!script_given && name == "sed");
                targets.extend(positionals.iter().skip(skip).map(|p| written(p)));
            }
        }
        "cp" | "mv" | "install" | "rsync" | "ln" => {
            let (destination, sources): (Option<String>, Vec<String>) = match target_dir {
                Some(dir) => (Some(format!("{dir}/")), positionals.clone()),
                None => match positionals.split_last() {
                    Some((last, sources)) if !sources.is_empty() => {
                        (Some(last.clone()), sources.to_vec())
                    }
                    // `ln -s TARGET`: the link is made here, named after it.
                    Some((only, _)) if name == "ln" => (Some("./".into()), vec![only.clone()]),
                    _ => (None, Vec::new()),
                },
            };
            let Some(destination) = destination else {
                return targets;
            };
            let into_dir = destination.ends_with('/') || is_dir(&destination) || sources.len() > 1;
            for source in &sources {
                // `rsync -a evil/ .claude/`: a source with a trailing slash
                // is copied into the destination itself.
                let contents_only = name == "rsync" && source.ends_with('/');
                let landed = if into_dir && !contents_only {
                    let trimmed = source.trim_end_matches('/');
                    format!(
                        "{}/{}",
                        destination.trim_end_matches('/'),
                        basename(trimmed)
                    )
                } else {
                    destination.clone()
                };
                targets.push(written(&landed));
                match name {
                    "mv" => targets.push(written(source)),
                    "ln" => targets.push(Target {
                        path: link_target(source, &landed, has("s") || has("symbolic")),
                        kind: TargetKind::LinkedTo,
                    }),
                    _ => {}
                }
            }
            if sources.is_empty() {
                targets.push(written(&destination));
            }
        }
        _ => {}
    }
    targets
}

/// What a new link points at, as a path from the command's directory: a
/// relative symlink target is relative to the link's own directory.
fn link_target(source: &str, link: &str, symbolic: bool) -> String {
    if !symbolic || source.starts_with('/') || source.starts_with('~') || source.starts_with('$') {
        return source.to_string();
    }
    match link.rsplit_once('/') {
        Some((dir, _)) if !dir.is_empty() => format!("{dir}/{source}"),
        _ => source.to_string(),
    }
}

/// `git rm|mv|checkout|restore` paths; `git clean -x|-X` and `git stash
/// -u|-a` without a pathspec touch the whole tree (`.`).
fn git_targets(rest: &[String]) -> Vec<Target> {
    let canonical = canonical_command(rest).unwrap_or_default();
    let words: Vec<&str> = canonical.split(' ').collect();
    let Some(subcommand) = words.get(1).copied() else {
        return Vec::new();
    };
    let args = &words[2.min(words.len())..];
    let positionals: Vec<&str> = args
        .iter()
        .copied()
        .filter(|w| !w.starts_with('-'))
        .collect();
    let flag_has = |letter: char, long: &str| {
        args.iter().any(|w| {
            *w == long || (w.starts_with('-') && !w.starts_with("--") && w.contains(letter))
        })
    };
    match subcommand {
        "rm" | "checkout" | "restore" => {
            let after_dashes: Vec<&str> = match args.iter().position(|w| *w == "--") {
                Some(at) => args[at + 1..].to_vec(),
                None if subcommand == "rm" => positionals.clone(),
                // `git checkout main` names a branch; only paths after `--`
                // or that look like paths count.
                None => positionals
                    .iter()
                    .copied()
                    .filter(|p| p.contains('/') || p.contains('.'))
                    .collect(),
            };
            after_dashes.into_iter().map(written).collect()
        }
        "mv" => positionals.into_iter().map(written).collect(),
        "clean" => {
            let forced = flag_has('f', "--force");
            let ignored_too = args.iter().any(|w| {
                w.starts_with('-') && !w.starts_with("--") && (w.contains('x') || w.contains('X'))
            });
            let dry = flag_has('n', "--dry-run");
            if forced && ignored_too && !dry {
                clean_paths(args)
            } else {
                Vec::new()
            }
        }
        "stash" => {
            let untracked = flag_has('u', "--include-untracked") || flag_has('a', "--all");
            let action = positionals.first().copied().unwrap_or("push");
            if untracked && matches!(action, "push" | "save" | "-u" | "-a") {
                clean_paths(args)
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    }
}

/// The pathspecs after `--` (or `.`, the whole tree, when none); an
/// exclusion (`-e PATTERN`, `:!x`, `:(exclude)x`) leaves the tree to the
/// check after the command.
fn clean_paths(args: &[&str]) -> Vec<Target> {
    let excludes = args.iter().any(|w| {
        *w == "-e"
            || w.starts_with("--exclude")
            || w.starts_with(":!")
            || w.starts_with(":^")
            || w.starts_with(":(exclude)")
    });
    if excludes {
        return Vec::new();
    }
    match args.iter().position(|w| *w == "--") {
        Some(at) if at + 1 < args.len() => args[at + 1..].iter().map(|p| written(p)).collect(),
        _ => vec![written(".")],
    }
}

/// A `ralph-hooks … task complete …` found in a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompleteCall {
    pub force: bool,
    /// `--project DIR`, when given.
    pub project: Option<String>,
}

/// Every call of `ralph-hooks task complete` in the text, however it is
/// invoked: by path, after `cd … &&`, under `env`/`sudo`/`timeout`, in
/// `$(…)`, in `bash -c '…'`, or as `cargo run --bin ralph-hooks -- …`.
pub fn task_complete_calls(text: &str) -> Vec<CompleteCall> {
    simple_commands(text)
        .iter()
        .filter_map(|words| ralph_hooks_args(words))
        .filter_map(complete_call)
        .collect()
}

/// The arguments given to ralph-hooks, if this simple command runs it.
pub fn ralph_hooks_args(words: &[String]) -> Option<&[String]> {
    let rest = command_part(words);
    let name = basename(rest.first()?);
    if name == "ralph-hooks" || name == "ralph-hooks.exe" {
        return Some(&rest[1..]);
    }
    if name == "cargo" && rest.iter().any(|w| w == "run") {
        let names_us = rest.windows(2).any(|pair| {
            (pair[0] == "--bin" || pair[0] == "-p" || pair[0] == "--package")
                && pair[1] == "ralph-hooks"
        }) || rest.iter().any(|w| w == "--bin=ralph-hooks");
        if names_us {
            let separator = rest.iter().position(|w| w == "--")?;
            return Some(&rest[separator + 1..]);
        }
    }
    None
}

/// The positional words of a ralph-hooks call (flags and the values of the
/// flags that take one left out), and whether `flag` was given.
pub fn ralph_hooks_positionals(args: &[String]) -> Vec<&str> {
    let flag_end = args.iter().position(|w| w == "--").unwrap_or(args.len());
    let mut positionals = Vec::new();
    let mut index = 0;
    while index < args.len() {
        let word = args[index].as_str();
        if index < flag_end && word.starts_with("--") {
            if !word.contains('=')
                && matches!(
                    word,
                    "--project"
                        | "--summary"
                        | "--note"
                        | "--priority"
                        | "--check"
                        | "--promise"
                        | "--max-iterations"
                        | "--check-timeout"
                        | "--path"
                )
            {
                index += 1;
            }
            index += 1;
            continue;
        }
        if word != "--" {
            positionals.push(word);
        }
        index += 1;
    }
    positionals
}

fn complete_call(args: &[String]) -> Option<CompleteCall> {
    let flag_end = args.iter().position(|w| w == "--").unwrap_or(args.len());
    let flags = &args[..flag_end];
    if flags.iter().any(|w| w == "--help" || w == "-h") {
        return None;
    }
    let positionals = ralph_hooks_positionals(args);
    if positionals.first() != Some(&"task") || positionals.get(1) != Some(&"complete") {
        return None;
    }
    let project = flags.iter().enumerate().find_map(|(at, w)| {
        w.strip_prefix("--project=")
            .map(str::to_string)
            .or_else(|| {
                (w == "--project")
                    .then(|| args.get(at + 1).cloned())
                    .flatten()
            })
    });
    Some(CompleteCall {
        force: flags.iter().any(|w| w == "--force"),
        project,
    })
}

// ---- the lexer ----

/// A command as lexed, before nested scripts are read.
#[derive(Debug, Default)]
struct RawCommand {
    words: Vec<String>,
    redirects: Vec<Redirect>,
    stdin_text: Option<String>,
    /// Its stdout is piped into the next command (`a | b`, not `a || b`).
    piped: bool,
}

struct Lexed {
    commands: Vec<RawCommand>,
    substitutions: Vec<String>,
}

/// A here-document waiting for its body after the end of the line.
struct PendingHeredoc {
    command: usize,
    delimiter: String,
    strip_tabs: bool,
}

struct Lexer {
    chars: Vec<char>,
    index: usize,
    commands: Vec<RawCommand>,
    current: RawCommand,
    substitutions: Vec<String>,
    pending: Vec<PendingHeredoc>,
}

fn lex(text: &str) -> Lexed {
    let mut lexer = Lexer {
        chars: text.chars().collect(),
        index: 0,
        commands: Vec::new(),
        current: RawCommand::default(),
        substitutions: Vec::new(),
        pending: Vec::new(),
    };
    lexer.run();
    Lexed {
        commands: lexer.commands,
        substitutions: lexer.substitutions,
    }
}

impl Lexer {
    fn peek(&self, offset: usize) -> Option<char> {
        self.chars.get(self.index + offset).copied()
    }

    fn end_command(&mut self, piped: bool) {
        let mut command = std::mem::take(&mut self.current);
        if command.words.is_empty() && command.redirects.is_empty() {
            // `a |\n b`: the pipe flag stays with the command before.
            if piped && let Some(last) = self.commands.last_mut() {
                last.piped = true;
            }
            return;
        }
        command.piped = piped;
        self.commands.push(command);
    }

    fn run(&mut self) {
        while self.index < self.chars.len() {
            let c = self.chars[self.index];
            match c {
                ' ' | '\t' | '\r' => self.index += 1,
                '\\' if self.peek(1) == Some('\n') => self.index += 2,
                '#' => {
                    while self.index < self.chars.len() && self.chars[self.index] != '\n' {
                        self.index += 1;
                    }
                }
                '\n' => {
                    self.end_command(false);
                    self.index += 1;
                    self.read_heredoc_bodies();
                }
                ';' => {
                    self.end_command(false);
                    self.index += 1;
                    if matches!(self.peek(0), Some(';' | '&')) {
                        self.index += 1;
                    }
                }
                '&' if self.peek(1) == Some('&') => {
                    self.end_command(false);
                    self.index += 2;
                }
                '&' if self.peek(1) == Some('>') => {
                    self.index += 1;
                    self.redirect(true);
                }
                '&' => {
                    self.end_command(false);
                    self.index += 1;
                }
                '|' if self.peek(1) == Some('|') => {
                    self.end_command(false);
                    self.index += 2;
                }
                '|' => {
                    self.end_command(true);
                    self.index += 1;
                    if self.peek(0) == Some('&') {
                        self.index += 1;
                    }
                }
                '(' | ')' => {
                    self.end_command(false);
                    self.index += 1;
                }
                '<' | '>' if self.peek(1) == Some('(') => {
                    // Process substitution: a command whose output or input
                    // is a pipe; it is a word (a /dev/fd path) here.
                    let (body, next) = balanced(&self.chars, self.index + 2);
                    self.substitutions.push(body);
                    self.index = next;
                    self.current.words.push("/dev/fd/63".into());
                }
                '<' | '>' => self.redirect(false),
                _ => {
                    // `2>file`, `10>&-`: a number right before `<`/`>`.
                    let digits = self.chars[self.index..]
                        .iter()
                        .take_while(|c| c.is_ascii_digit())
                        .count();
                    if digits > 0 && matches!(self.peek(digits), Some('<' | '>')) {
                        self.index += digits;
                        self.redirect(false);
                        continue;
                    }
                    let word = self.word();
                    self.current.words.push(word);
                }
            }
        }
        self.end_command(false);
        // A here-document with no newline before the end: its body is empty.
        self.read_heredoc_bodies();
    }

    /// At `<` or `>` (after `&` when `ampersand`): one redirection and its
    /// target word.
    fn redirect(&mut self, ampersand: bool) {
        let c = self.chars[self.index];
        let next = self.peek(1);
        let next2 = self.peek(2);
        let (operator, length): (&str, usize) = match (c, next, next2) {
            ('>', Some('>'), _) => (">>", 2),
            ('>', Some('|'), _) => (">|", 2),
            ('>', Some('&'), _) => (">&", 2),
            ('>', _, _) => (">", 1),
            ('<', Some('<'), Some('<')) => ("<<<", 3),
            ('<', Some('<'), Some('-')) => ("<<-", 3),
            ('<', Some('<'), _) => ("<<", 2),
            ('<', Some('>'), _) => ("<>", 2),
            ('<', Some('&'), _) => ("<&", 2),
            _ => ("<", 1),
        };
        self.index += length;
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.index += 1;
        }
        if self.index >= self.chars.len()
            || matches!(self.peek(0), Some('\n' | ';' | '|' | '&' | '(' | ')'))
        {
            return;
        }
        let target = self.word();
        let kind = match operator {
            ">" | ">>" | ">|" => RedirectKind::Write,
            _ if ampersand => RedirectKind::Write,
            ">&" | "<&" => {
                if target == "-" || target.chars().all(|c| c.is_ascii_digit()) {
                    RedirectKind::Duplicate
                } else if operator == ">&" {
                    RedirectKind::Write
                } else {
                    RedirectKind::Read
                }
            }
            "<>" => RedirectKind::ReadWrite,
            "<<<" => {
                self.current.stdin_text = Some(target);
                return;
            }
            "<<" | "<<-" => {
                self.pending.push(PendingHeredoc {
                    command: self.commands.len(),
                    delimiter: target,
                    strip_tabs: operator == "<<-",
                });
                return;
            }
            _ => RedirectKind::Read,
        };
        self.current.redirects.push(Redirect { kind, target });
    }

    /// After a newline: the bodies of the here-documents opened on the line.
    fn read_heredoc_bodies(&mut self) {
        for pending in std::mem::take(&mut self.pending) {
            let mut body = String::new();
            loop {
                if self.index >= self.chars.len() {
                    break;
                }
                let end = self.chars[self.index..]
                    .iter()
                    .position(|c| *c == '\n')
                    .map_or(self.chars.len(), |at| self.index + at);
                let line: String = self.chars[self.index..end].iter().collect();
                self.index = (end + 1).min(self.chars.len().max(end));
                let compared = if pending.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if compared == pending.delimiter {
                    break;
                }
                body.push_str(compared);
                body.push('\n');
            }
            if let Some(command) = self.commands.get_mut(pending.command) {
                command.stdin_text = Some(body);
            } else {
                // The command is still being read (`cat <<EOF` at the very end).
                self.current.stdin_text = Some(body);
            }
        }
    }

    /// One word: quotes removed, escapes resolved, substitutions recorded
    /// (and kept in the word as written).
    fn word(&mut self) -> String {
        let mut word = String::new();
        while self.index < self.chars.len() {
            let c = self.chars[self.index];
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '\\' => {
                    if let Some(next) = self.peek(1)
                        && next != '\n'
                    {
                        word.push(next);
                    }
                    self.index += 2;
                }
                '\'' => {
                    self.index += 1;
                    while self.index < self.chars.len() && self.chars[self.index] != '\'' {
                        word.push(self.chars[self.index]);
                        self.index += 1;
                    }
                    self.index += 1;
                }
                '$' if self.peek(1) == Some('\'') => {
                    self.index += 2;
                    word.push_str(&self.ansi_c_quoted());
                }
                '$' if self.peek(1) == Some('"') => {
                    self.index += 1;
                }
                '"' => {
                    self.index += 1;
                    while self.index < self.chars.len() && self.chars[self.index] != '"' {
                        match self.chars[self.index] {
                            '\\' if matches!(self.peek(1), Some('"' | '\\' | '$' | '`')) => {
                                word.push(self.chars[self.index + 1]);
                                self.index += 2;
                            }
                            '\\' if self.peek(1) == Some('\n') => self.index += 2,
                            '$' if self.peek(1) == Some('(') => self.substitution(&mut word),
                            '`' => self.backtick(&mut word),
                            other => {
                                word.push(other);
                                self.index += 1;
                            }
                        }
                    }
                    self.index += 1;
                }
                '$' if self.peek(1) == Some('(') => self.substitution(&mut word),
                '$' if self.peek(1) == Some('{') => {
                    let end = self.chars[self.index..]
                        .iter()
                        .position(|c| *c == '}')
                        .map_or(self.chars.len(), |at| self.index + at + 1);
                    word.extend(&self.chars[self.index..end]);
                    self.index = end;
                }
                '`' => self.backtick(&mut word),
                other => {
                    word.push(other);
                    self.index += 1;
                }
            }
        }
        word
    }

    fn substitution(&mut self, word: &mut String) {
        let (body, next) = balanced(&self.chars, self.index + 2);
        word.push_str(&format!("$({body})"));
        self.substitutions.push(body);
        self.index = next;
    }

    fn backtick(&mut self, word: &mut String) {
        let (body, next) = until_backtick(&self.chars, self.index + 1);
        word.push_str(&format!("`{body}`"));
        self.substitutions.push(body);
        self.index = next;
    }

    /// The text of `$'…'` (the index is just past the quote): bash's
    /// backslash escapes resolved.
    fn ansi_c_quoted(&mut self) -> String {
        let mut out = String::new();
        while self.index < self.chars.len() && self.chars[self.index] != '\'' {
            let c = self.chars[self.index];
            if c != '\\' {
                out.push(c);
                self.index += 1;
                continue;
            }
            let Some(next) = self.peek(1) else {
                self.index += 1;
                break;
            };
            self.index += 2;
            match next {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'a' => out.push('\u{7}'),
                'b' => out.push('\u{8}'),
                'e' | 'E' => out.push('\u{1b}'),
                'f' => out.push('\u{c}'),
                'v' => out.push('\u{b}'),
                'x' | 'u' | 'U' => {
                    let max = match next {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex: String = self.chars[self.index..]
                        .iter()
                        .take(max)
                        .take_while(|c| c.is_ascii_hexdigit())
                        .collect();
                    self.index += hex.len();
                    if let Some(decoded) =
                        u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
                    {
                        out.push(decoded);
                    }
                }
                '0'..='7' => {
                    let octal: String = std::iter::once(next)
                        .chain(
                            self.chars[self.index..]
                                .iter()
                                .copied()
                                .take(2)
                                .take_while(|c| ('0'..='7').contains(c)),
                        )
                        .collect();
                    self.index += octal.len() - 1;
                    if let Some(decoded) =
                        u32::from_str_radix(&octal, 8).ok().and_then(char::from_u32)
                    {
                        out.push(decoded);
                    }
                }
                other => out.push(other),
            }
        }
        self.index += 1;
        out
    }
}

/// The text up to the `)` that closes a `$(` (quotes inside respected), and
/// the index after it. An unclosed one runs to the end.
fn balanced(chars: &[char], start: usize) -> (String, usize) {
    let mut depth = 1;
    let mut index = start;
    let mut quote: Option<char> = None;
    while index < chars.len() {
        let c = chars[index];
        match quote {
            Some(q) if c == q => quote = None,
            Some('"') if c == '\\' => index += 1,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '\\' => index += 1,
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let body: String = chars[start..index].iter().collect();
                        return (body, index + 1);
                    }
                }
                _ => {}
            },
        }
        index += 1;
    }
    (
        chars[start.min(chars.len())..].iter().collect(),
        chars.len(),
    )
}

fn until_backtick(chars: &[char], start: usize) -> (String, usize) {
    let mut index = start;
    let mut body = String::new();
    while index < chars.len() && chars[index] != '`' {
        if chars[index] == '\\' && chars.get(index + 1) == Some(&'`') {
            body.push('`');
            index += 2;
            continue;
        }
        body.push(chars[index]);
        index += 1;
    }
    (body, index + 1)
}

#[cfg(test)]
pub(crate) mod tests {
    /// Ways to run `task complete` that the guard must see; shared with the
    /// chain judge's tests.
    pub(crate) const INVOCATION_FORMS: &[&str] = &[
        "ralph-hooks task complete",
        "/usr/local/bin/ralph-hooks task complete",
        "./target/debug/ralph-hooks --debug task complete",
        "cd /x && ralph-hooks task complete",
        "cargo build; ralph-hooks task complete | tee log",
        "RALPH_HOOKS_DEBUG=1 ralph-hooks task complete",
        "env -i PATH=/bin ralph-hooks task complete",
        "sudo -u me ralph-hooks task complete",
        "timeout 10 ralph-hooks task complete",
        "bash -c 'ralph-hooks task complete'",
        "sh -lc \"cd x && ralph-hooks task complete\"",
        "eval ralph-hooks task complete",
        "echo \"$(ralph-hooks task complete)\"",
        "x=`ralph-hooks task complete`",
        "(ralph-hooks task complete)",
        "if ralph-hooks task complete; then echo ok; fi",
    ];

    use super::*;

    fn calls(text: &str) -> Vec<CompleteCall> {
        task_complete_calls(text)
    }

    fn call(force: bool, project: Option<&str>) -> CompleteCall {
        CompleteCall {
            force,
            project: project.map(str::to_string),
        }
    }

    #[test]
    fn finds_task_complete_however_it_is_invoked() {
        for text in INVOCATION_FORMS.iter().copied().chain([
            "ralph-hooks task complete --summary 'all done'",
            "\"ralph-hooks\" task \\\n complete",
            "cargo run -q --bin ralph-hooks -- task complete",
            "ralph-hooks task --summary done complete",
        ]) {
            assert_eq!(calls(text), vec![call(false, None)], "{text}");
        }
    }

    #[test]
    fn force_and_project_are_seen() {
        assert_eq!(
            calls("ralph-hooks task complete --force"),
            vec![call(true, None)]
        );
        assert_eq!(
            calls("ralph-hooks --project /p task complete"),
            vec![call(false, Some("/p"))]
        );
        assert_eq!(
            calls("ralph-hooks --project=/q task complete --force"),
            vec![call(true, Some("/q"))]
        );
    }

    #[test]
    fn mentions_are_not_calls() {
        for text in [
            "grep 'ralph-hooks task complete' README.md",
            "echo ralph-hooks task complete",
            "git commit -m 'ralph-hooks task complete now guarded'",
            "ralph-hooks task status",
            "ralph-hooks task step complete s1",
            "ralph-hooks task complete --help",
            "# ralph-hooks task complete",
            "cargo run --bin other -- task complete",
            "command -v ralph-hooks task complete",
        ] {
            assert!(calls(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn command_part_skips_wrappers_and_assignments() {
        let words: Vec<String> = ["FOO=1", "sudo", "-u", "x", "git", "push", "origin"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(command_part(&words).join(" "), "git push origin");
    }

    fn canonical(text: &str) -> Vec<String> {
        simple_commands(text)
            .iter()
            .filter_map(|words| canonical_command(words))
            .collect()
    }

    #[test]
    fn global_options_and_paths_are_stepped_over() {
        for (text, expected) in [
            ("git -C . push", "git push"),
            ("git -c k=v push origin", "git push origin"),
            ("git --no-pager push", "git push"),
            ("git --git-dir=.git --work-tree . push", "git push"),
            ("/usr/bin/git push", "git push"),
            ("cargo +nightly publish", "cargo publish"),
            (
                "cargo -Z unstable-options --locked publish",
                "cargo publish",
            ),
            ("npm --registry https://r.example publish", "npm publish"),
            ("npm --registry=https://r.example publish", "npm publish"),
            ("gh -R o/r pr create", "gh pr create"),
        ] {
            assert!(
                canonical(text).contains(&expected.to_string()),
                "{text}: {:?}",
                canonical(text)
            );
        }
    }

    #[test]
    fn wrapper_and_shell_spellings_reach_the_command() {
        for text in [
            "env -i git push",
            "env -i -u HOME git push",
            "env -S 'git push'",
            "command -p git push",
            "command git push",
            "time -p git push",
            "time git push",
            "sudo -i git push",
            "sudo -s git push",
            "sudo -E -H git push",
            "nice -n 5 git push",
            "nice -5 git push",
            "timeout -s KILL 10 git push",
            "stdbuf -oL git push",
            "sh -c -- 'git push'",
            "bash -e -c 'git push'",
            "bash -o pipefail -c 'git push'",
            "bash --norc -c 'git push'",
            "bash <<< $'git push'",
            "bash <<< $'echo hi\\ngit push'",
            ">/dev/null git push",
            "2>&1 git push",
            "2> /dev/null git push",
            "git >/dev/null push",
            "coproc git push",
            "coproc P { git push; }",
            "! git push",
            "exec git push",
            "exec -a NAME git push",
            "exec -a sh git push origin main",
            "exec -c git push",
            "exec -cl git push",
            "exec -la NAME git push",
            "exec -- git push",
            "exec -c -a x -- git push",
            "(exec -a build git push)",
            "xargs -n1 git push",
            "su -c 'git push' me",
            "watch -n 5 git push",
            "flock /tmp/l git push",
            "flock /tmp/l -c 'git push'",
            "busybox sh -c 'git push'",
            "echo 'git push' | sh",
            "cat <<EOF | sh\ngit push\nEOF",
            "sh <<'EOF'\ngit push\nEOF",
            "bash -s <<-EOF\n\tgit push\n\tEOF",
        ] {
            assert!(
                canonical(text).iter().any(|c| c.starts_with("git push")),
                "{text}: {:?}",
                canonical(text)
            );
        }
    }

    #[test]
    fn package_runners_reach_the_command() {
        for (text, expected) in [
            ("npx npm publish", "npm publish"),
            ("npx -y npm publish", "npm publish"),
            ("npx -p npm npm publish", "npm publish"),
            ("npm exec -- npm publish", "npm publish"),
            ("npm x -- npm publish", "npm publish"),
            ("npm exec -c 'npm publish'", "npm publish"),
            ("npx -c 'npm publish'", "npm publish"),
            ("pnpm dlx npm publish", "npm publish"),
            ("pnpm exec npm publish", "npm publish"),
            ("yarn dlx npm publish", "npm publish"),
            ("bunx npm publish", "npm publish"),
            ("bun x npm publish", "npm publish"),
            ("pnpm --filter app publish", "pnpm publish"),
        ] {
            assert!(
                canonical(text).contains(&expected.to_string()),
                "{text}: {:?}",
                canonical(text)
            );
        }
    }

    #[test]
    fn heredocs_are_input_not_commands() {
        for text in [
            "cat > RELEASE.md <<'EOF'\nRun git push origin main when done\ngit push origin main\nEOF",
            "tee notes.md <<EOF\ngit push\nEOF",
            "python3 - <<'EOF'\nprint('git push')\nEOF",
            "cat <<EOF > notes.md\ngit push\nEOF\necho done",
        ] {
            assert!(
                !canonical(text).iter().any(|c| c.starts_with("git push")),
                "{text}: {:?}",
                canonical(text)
            );
        }
        // The command after the here-document is still read.
        assert!(canonical("cat > a <<EOF\nx\nEOF\ngit push").contains(&"git push".to_string()));
    }

    #[test]
    fn command_v_is_a_mention() {
        assert!(
            !canonical("command -v git push")
                .iter()
                .any(|c| c.starts_with("git"))
        );
    }

    #[test]
    fn shells_fed_on_stdin_are_read() {
        for text in [
            "echo 'git push' | sh",
            "printf 'git push\\n' | bash -s",
            "echo git push | /bin/bash",
            "bash <<< 'git push'",
        ] {
            assert!(
                canonical(text).contains(&"git push".to_string()),
                "{text}: {:?}",
                canonical(text)
            );
        }
        assert!(!canonical("echo 'git push' | grep push").contains(&"git push".to_string()));
        assert!(!canonical("echo 'git push' || sh").contains(&"git push".to_string()));
    }

    struct FakeScripts(&'static str, &'static str);

    impl Scripts for FakeScripts {
        fn read(&self, file: &ScriptFile) -> Option<String> {
            (file.path == self.0).then(|| self.1.to_string())
        }
    }

    #[test]
    fn script_files_are_read_through_the_source() {
        let scripts = FakeScripts("deploy.sh", "#!/bin/sh\nset -e\ngit push origin main\n");
        for text in [
            "sh deploy.sh",
            "bash -e deploy.sh arg",
            "source deploy.sh",
            ". deploy.sh",
            "sh < deploy.sh",
            "cat deploy.sh | sh",
        ] {
            let found: Vec<String> = commands(text, &scripts)
                .iter()
                .filter_map(|c| canonical_command(&c.words))
                .collect();
            assert!(
                found.contains(&"git push origin main".to_string()),
                "{text}: {found:?}"
            );
        }
        let dotted = FakeScripts("./deploy.sh", "git push\n");
        let found: Vec<String> = commands("./deploy.sh", &dotted)
            .iter()
            .filter_map(|c| canonical_command(&c.words))
            .collect();
        assert!(found.contains(&"git push".to_string()), "{found:?}");
    }

    fn targets(text: &str) -> Vec<String> {
        commands(text, &NoScripts)
            .iter()
            .flat_map(|command| write_targets(command, &|path| path == "." || path == ".claude"))
            .filter(|t| t.kind == TargetKind::Written)
            .map(|t| t.path)
            .collect()
    }

    #[test]
    fn every_redirection_form_is_a_target() {
        for text in [
            "echo x > a.json",
            "echo x >a.json",
            "echo x >> a.json",
            "echo x >| a.json",
            "echo x &> a.json",
            "echo x &>> a.json",
            "echo x >& a.json",
            "echo x 2> a.json",
            "echo x 1>>a.json",
            "exec 3<> a.json",
            "> a.json echo x",
            "echo x>a.json",
        ] {
            assert_eq!(targets(text), vec!["a.json"], "{text}");
        }
        assert!(targets("echo x 2>&1").is_empty());
        assert!(targets("echo x >&2").is_empty());
        assert!(targets("cat < a.json").is_empty());
    }

    #[test]
    fn write_targets_of_shell_forms() {
        assert_eq!(targets("echo x | tee -a a b"), vec!["a", "b"]);
        assert_eq!(targets("sed -i s/a/b/ c.json"), vec!["c.json"]);
        assert_eq!(targets("sed -Ei 's/a/b/' c.json"), vec!["c.json"]);
        assert_eq!(
            targets("sed -i.bak -e s/a/b/ c.json d"),
            vec!["c.json", "d"]
        );
        assert_eq!(targets("sed --in-place=.bak s/a/b/ c.json"), vec!["c.json"]);
        assert_eq!(targets("perl -pi -e 's/a/b/' c.json"), vec!["c.json"]);
        assert_eq!(targets("cp x.json .claude/"), vec![".claude/x.json"]);
        assert_eq!(targets("cp -t .claude x.json"), vec![".claude/x.json"]);
        assert_eq!(
            targets("cp --target-directory=.claude x.json"),
            vec![".claude/x.json"]
        );
        assert_eq!(targets("cp -r evil/.claude ."), vec!["./.claude"]);
        assert_eq!(
            targets("mv ralph-hooks.json .claude/"),
            vec![".claude/ralph-hooks.json", "ralph-hooks.json"]
        );
        assert_eq!(
            targets("mv .claude .claude.bak"),
            vec![".claude.bak", ".claude"]
        );
        assert_eq!(targets("rm -rf .claude"), vec![".claude"]);
        assert_eq!(targets("rm -f .claude/*"), vec![".claude/*"]);
        assert_eq!(targets("truncate -s 0 a"), vec!["a"]);
        assert_eq!(targets("touch -d yesterday a"), vec!["a"]);
        assert_eq!(targets("chmod 000 a"), vec!["a"]);
        assert_eq!(targets("dd if=/dev/zero of=a"), vec!["a"]);
        assert_eq!(targets("rsync -a evil/ .claude/"), vec![".claude/"]);
        assert_eq!(targets("git rm -r --cached x"), vec!["x"]);
        assert_eq!(targets("git checkout -- .lsp.json"), vec![".lsp.json"]);
        assert_eq!(targets("git clean -fdx"), vec!["."]);
        assert_eq!(targets("git stash -u"), vec!["."]);
        assert_eq!(targets("git stash push --include-untracked"), vec!["."]);
        assert!(targets("git clean -fd").is_empty());
        assert!(targets("git clean -fdx -e .claude").is_empty());
        assert!(targets("git stash").is_empty());
        assert!(targets("git checkout main").is_empty());
        assert!(targets("cat a.json").is_empty());
        assert!(targets("sed s/a/b/ c.json").is_empty());
    }

    #[test]
    fn links_name_what_they_point_at() {
        let linked = |text: &str| -> Vec<String> {
            commands(text, &NoScripts)
                .iter()
                .flat_map(|command| write_targets(command, &|_| false))
                .filter(|t| t.kind == TargetKind::LinkedTo)
                .map(|t| t.path)
                .collect()
        };
        assert_eq!(
            linked("ln -s .claude/ralph-hooks.json notes.json"),
            vec![".claude/ralph-hooks.json"]
        );
        assert_eq!(
            linked("ln -s ../.claude/x sub/notes.json"),
            vec!["sub/../.claude/x"]
        );
        assert_eq!(
            linked("ln .claude/orchestrator/loop.json h.json"),
            vec![".claude/orchestrator/loop.json"]
        );
        assert_eq!(linked("ln -sf /abs/x y"), vec!["/abs/x"]);
    }

    #[test]
    fn cd_is_followed() {
        let found = commands("cd .claude && rm -rf orchestrator; cd - ; rm x", &NoScripts);
        assert_eq!(found[1].cwd.cds, vec![".claude"]);
        assert!(!found[1].cwd.unknown);
        assert!(found[3].cwd.unknown);
        let nested = commands("bash -c 'cd .claude; rm ralph-hooks.json'", &NoScripts);
        assert_eq!(nested.last().unwrap().cwd.cds, vec![".claude"]);
    }

    #[test]
    fn substitutions_and_operators_split_commands() {
        let commands: Vec<String> = simple_commands("a 1 && b \"$(c 2)\" || d; e | f")
            .iter()
            .map(|w| w.join(" "))
            .collect();
        assert_eq!(commands, vec!["a 1", "b $(c 2)", "d", "e", "f", "c 2"]);
    }
}

//! Just enough of the POSIX shell grammar to see which commands a Bash tool
//! call runs: words (with quotes and escapes), the operators that separate
//! commands (`;` `&&` `||` `|` `&` newlines, parentheses), command
//! substitutions (`$(…)`, backticks, also inside double quotes), comments,
//! and scripts handed to `sh -c` / `bash -c` / `eval`, which are read again.
//!
//! It does not expand anything: an alias or a variable holding a command
//! name is invisible here, which is why the CLI refuses the same things on
//! its own and this guard is only the early, explained "no".

/// Words that may precede the command itself and are not it.
const RESERVED: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "time", "exec",
];

/// Commands that run the command after them (with options of their own).
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "command", "nohup", "nice", "ionice", "timeout", "stdbuf", "xargs",
    "time", "exec", "builtin", "chrt", "setsid", "unbuffer",
];

/// Options of those wrappers that take a value in the next word.
const WRAPPER_OPTIONS_WITH_VALUE: &[&str] = &[
    "-u",
    "-g",
    "-n",
    "-k",
    "-s",
    "-C",
    "-p",
    "-o",
    "-e",
    "-i",
    "-I",
    "-L",
    "-P",
    "-d",
    "-c",
    "--user",
    "--group",
    "--signal",
    "--kill-after",
    "--adjustment",
    "--unset",
    "--chdir",
];

const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "fish"];

/// How deep `bash -c "bash -c '…'"` and `$( $( … ) )` are followed.
const MAX_DEPTH: usize = 4;

/// Every simple command the text runs, as its words, in order; nested
/// scripts (`$(…)`, `sh -c`, `eval`) are included after their parent.
pub fn simple_commands(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    collect(text, 0, &mut out);
    out
}

fn collect(text: &str, depth: usize, out: &mut Vec<Vec<String>>) {
    let lexed = lex(text);
    for (index, words) in lexed.commands.iter().enumerate() {
        if words.is_empty() {
            continue;
        }
        out.push(words.clone());
        if depth >= MAX_DEPTH {
            continue;
        }
        if let Some(script) = inner_script(words) {
            collect(&script, depth + 1, out);
        }
        // `echo 'git push' | sh`: a shell reading its script from a pipe
        // runs what the command before it prints.
        if lexed.piped.get(index) == Some(&true)
            && let Some(next) = lexed.commands.get(index + 1)
            && reads_script_from_stdin(next)
            && let Some(script) = printed_text(words)
        {
            collect(&script, depth + 1, out);
        }
    }
    if depth < MAX_DEPTH {
        for substitution in lexed.substitutions {
            collect(&substitution, depth + 1, out);
        }
    }
}

/// The script of `sh -c SCRIPT`, `bash -lc SCRIPT`, `bash <<< SCRIPT` or
/// `eval WORDS…`.
fn inner_script(words: &[String]) -> Option<String> {
    let rest = command_part(words);
    let name = basename(rest.first()?);
    if name == "eval" {
        return Some(rest[1..].join(" "));
    }
    if SHELLS.contains(&name)
        && let Some(at) = rest.iter().position(|w| w.starts_with("<<<"))
    {
        let inline = &rest[at]["<<<".len()..];
        return if inline.is_empty() {
            rest.get(at + 1).cloned()
        } else {
            Some(inline.to_string())
        };
    }
    if SHELLS.contains(&name) {
        let flag = rest[1..]
            .iter()
            .position(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('c'))?;
        return rest.get(flag + 2).cloned();
    }
    None
}

/// `sh`, `bash -s`, `bash -x` …: a shell given no script (no `-c`, no
/// script file), which reads its commands from stdin.
fn reads_script_from_stdin(words: &[String]) -> bool {
    let rest = command_part(words);
    let Some(name) = rest.first() else {
        return false;
    };
    SHELLS.contains(&basename(name))
        && rest[1..]
            .iter()
            .all(|w| w.starts_with('-') && (w.starts_with("--") || !w.contains('c')))
}

/// What `echo …` / `printf …` prints, as far as it can be known.
fn printed_text(words: &[String]) -> Option<String> {
    let rest = command_part(words);
    let name = basename(rest.first()?);
    let args: Vec<&str> = rest[1..]
        .iter()
        .map(String::as_str)
        .skip_while(|w| name == "echo" && w.starts_with('-'))
        .collect();
    match name {
        "echo" | "printf" => Some(args.join(" ").replace("\\n", "\n")),
        _ => None,
    }
}

/// The words from the command name on: leading assignments, reserved
/// words and wrappers (with their options) are stepped over.
pub fn command_part(words: &[String]) -> &[String] {
    let mut index = 0;
    while index < words.len() {
        let word = words[index].as_str();
        if RESERVED.contains(&word) || is_assignment(word) {
            index += 1;
            continue;
        }
        if WRAPPERS.contains(&basename(word)) {
            let wrapper = basename(word);
            index += 1;
            let mut first_positional = true;
            while index < words.len() {
                let option = words[index].as_str();
                if option == "--" {
                    index += 1;
                    break;
                }
                if option.starts_with('-') && option.len() > 1 {
                    index += 1;
                    if WRAPPER_OPTIONS_WITH_VALUE.contains(&option) && index < words.len() {
                        index += 1;
                    }
                    continue;
                }
                if is_assignment(option) {
                    index += 1;
                    continue;
                }
                // `timeout 10 cmd`: the duration is the wrapper's own.
                if wrapper == "timeout"
                    && first_positional
                    && option.starts_with(|c: char| c.is_ascii_digit())
                {
                    index += 1;
                    first_positional = false;
                    continue;
                }
                break;
            }
            continue;
        }
        break;
    }
    &words[index.min(words.len())..]
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

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

/// Paths a simple command writes, moves or removes, as written: redirection
/// targets (`>`, `>>`, `>|`, `&>`, `2>`), and the files of `tee`, `sed -i`,
/// `cp`/`install`/`ln` (destination), `mv`, `rm`, `unlink`, `truncate`,
/// `shred`, `touch` (all) and `dd of=`. The guard compares them with the
/// files it protects; anything it cannot see (a script, an alias, python)
/// is a documented limit.
pub fn write_targets(words: &[String]) -> Vec<String> {
    let mut targets = Vec::new();
    let mut index = 0;
    while index < words.len() {
        let word = &words[index];
        if let Some(at) = word.find('>') {
            let after = word[at..].trim_start_matches(['>', '|']);
            if after.is_empty() {
                if let Some(next) = words.get(index + 1) {
                    targets.push(next.clone());
                    index += 1;
                }
            } else if !after.starts_with('&') {
                targets.push(after.to_string());
            }
        }
        index += 1;
    }
    let rest = command_part(words);
    let Some(name) = rest.first().map(|w| basename(w)) else {
        return targets;
    };
    let positionals: Vec<&String> = rest[1..]
        .iter()
        .filter(|w| !w.starts_with('-') && !w.contains('>'))
        .collect();
    match name {
        "tee" | "mv" | "rm" | "unlink" | "truncate" | "shred" | "touch" => {
            targets.extend(positionals.into_iter().cloned());
        }
        "sed"
            if rest[1..]
                .iter()
                .any(|w| w.starts_with("-i") || w.starts_with("--in-place")) =>
        {
            targets.extend(positionals.into_iter().cloned());
        }
        "cp" | "install" | "ln" | "rsync" => {
            if let Some((destination, sources)) = positionals.split_last() {
                targets.push((*destination).clone());
                // `cp x.json .claude/`: the file lands under the source's name.
                for source in sources {
                    targets.push(format!("{destination}/{}", basename(source)));
                }
            }
        }
        "dd" => targets.extend(
            rest[1..]
                .iter()
                .filter_map(|w| w.strip_prefix("of="))
                .map(str::to_string),
        ),
        _ => {}
    }
    targets
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

fn complete_call(args: &[String]) -> Option<CompleteCall> {
    let flag_end = args.iter().position(|w| w == "--").unwrap_or(args.len());
    let flags = &args[..flag_end];
    if flags.iter().any(|w| w == "--help" || w == "-h") {
        return None;
    }
    let mut positionals = Vec::new();
    let mut project = None;
    let mut index = 0;
    while index < args.len() {
        let word = args[index].as_str();
        if index < flag_end && word.starts_with("--") {
            if let Some(value) = word.strip_prefix("--project=") {
                project = Some(value.to_string());
            } else if matches!(word, "--project" | "--summary" | "--note" | "--priority") {
                if word == "--project" {
                    project = args.get(index + 1).cloned();
                }
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
    if positionals.first() != Some(&"task") || positionals.get(1) != Some(&"complete") {
        return None;
    }
    Some(CompleteCall {
        force: flags.iter().any(|w| w == "--force"),
        project,
    })
}

struct Lexed {
    commands: Vec<Vec<String>>,
    /// Parallel to `commands`: whether the command's stdout is piped into
    /// the next one (`a | b`, not `a || b`).
    piped: Vec<bool>,
    substitutions: Vec<String>,
}

fn lex(text: &str) -> Lexed {
    let chars: Vec<char> = text.chars().collect();
    let mut lexed = Lexed {
        commands: Vec::new(),
        piped: Vec::new(),
        substitutions: Vec::new(),
    };
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut index = 0;
    let end_word = |word: &mut String, in_word: &mut bool, words: &mut Vec<String>| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while index < chars.len() {
        let c = chars[index];
        match c {
            ' ' | '\t' => {
                end_word(&mut word, &mut in_word, &mut words);
                index += 1;
            }
            '|' if chars.get(index + 1) == Some(&'|') => {
                end_word(&mut word, &mut in_word, &mut words);
                lexed.commands.push(std::mem::take(&mut words));
                lexed.piped.push(false);
                index += 2;
            }
            '|' => {
                end_word(&mut word, &mut in_word, &mut words);
                lexed.commands.push(std::mem::take(&mut words));
                lexed.piped.push(true);
                index += 1;
                if chars.get(index) == Some(&'&') {
                    index += 1;
                }
            }
            '\n' | ';' | '&' | '(' | ')' => {
                end_word(&mut word, &mut in_word, &mut words);
                lexed.commands.push(std::mem::take(&mut words));
                lexed.piped.push(false);
                index += 1;
            }
            '#' if !in_word => {
                while index < chars.len() && chars[index] != '\n' {
                    index += 1;
                }
            }
            '\\' => {
                if let Some(&next) = chars.get(index + 1)
                    && next != '\n'
                {
                    word.push(next);
                    in_word = true;
                }
                index += 2;
            }
            '\'' => {
                in_word = true;
                index += 1;
                while index < chars.len() && chars[index] != '\'' {
                    word.push(chars[index]);
                    index += 1;
                }
                index += 1;
            }
            '"' => {
                in_word = true;
                index += 1;
                while index < chars.len() && chars[index] != '"' {
                    match chars[index] {
                        '\\' if matches!(chars.get(index + 1), Some('"' | '\\' | '$' | '`')) => {
                            word.push(chars[index + 1]);
                            index += 2;
                        }
                        '$' if chars.get(index + 1) == Some(&'(') => {
                            let (body, next) = balanced(&chars, index + 2);
                            word.push_str(&format!("$({body})"));
                            lexed.substitutions.push(body);
                            index = next;
                        }
                        '`' => {
                            let (body, next) = until_backtick(&chars, index + 1);
                            word.push_str(&format!("`{body}`"));
                            lexed.substitutions.push(body);
                            index = next;
                        }
                        other => {
                            word.push(other);
                            index += 1;
                        }
                    }
                }
                index += 1;
            }
            '$' if chars.get(index + 1) == Some(&'(') => {
                let (body, next) = balanced(&chars, index + 2);
                word.push_str(&format!("$({body})"));
                in_word = true;
                lexed.substitutions.push(body);
                index = next;
            }
            '`' => {
                let (body, next) = until_backtick(&chars, index + 1);
                word.push_str(&format!("`{body}`"));
                in_word = true;
                lexed.substitutions.push(body);
                index = next;
            }
            other => {
                word.push(other);
                in_word = true;
                index += 1;
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut words);
    lexed.commands.push(words);
    lexed.piped.push(false);
    // Drop empty commands, keeping each pipe flag with its command.
    let mut kept = Vec::new();
    let mut piped = Vec::new();
    for (words, pipe) in lexed.commands.drain(..).zip(lexed.piped.drain(..)) {
        if !words.is_empty() {
            kept.push(words);
            piped.push(pipe);
        } else if pipe && let Some(last) = piped.last_mut() {
            *last = true;
        }
    }
    lexed.commands = kept;
    lexed.piped = piped;
    lexed
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

    #[test]
    fn write_targets_of_shell_forms() {
        let targets = |text: &str| -> Vec<String> {
            simple_commands(text)
                .iter()
                .flat_map(|words| write_targets(words))
                .collect()
        };
        assert_eq!(targets("echo x > a.json"), vec!["a.json"]);
        assert_eq!(targets("echo x >>a.json 2>&1"), vec!["a.json"]);
        assert_eq!(targets("echo x | tee -a a b"), vec!["a", "b"]);
        assert_eq!(targets("sed -i s/a/b/ c.json"), vec!["s/a/b/", "c.json"]);
        assert_eq!(
            targets("cp x.json .claude/"),
            vec![".claude/", ".claude//x.json"]
        );
        assert_eq!(targets("mv a b"), vec!["a", "b"]);
        assert_eq!(targets("rm -f a"), vec!["a"]);
        assert_eq!(targets("truncate -s 0 a"), vec!["0", "a"]);
        assert!(targets("cat a.json").is_empty());
        assert!(targets("sed s/a/b/ c.json").is_empty());
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

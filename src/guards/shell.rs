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
    for words in lexed.commands {
        if words.is_empty() {
            continue;
        }
        if depth < MAX_DEPTH
            && let Some(script) = inner_script(&words)
        {
            out.push(words);
            collect(&script, depth + 1, out);
            continue;
        }
        out.push(words);
    }
    if depth < MAX_DEPTH {
        for substitution in lexed.substitutions {
            collect(&substitution, depth + 1, out);
        }
    }
}

/// The script of `sh -c SCRIPT`, `bash -lc SCRIPT` or `eval WORDS…`.
fn inner_script(words: &[String]) -> Option<String> {
    let rest = command_part(words);
    let name = basename(rest.first()?);
    if name == "eval" {
        return Some(rest[1..].join(" "));
    }
    if SHELLS.contains(&name) {
        let flag = rest[1..]
            .iter()
            .position(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('c'))?;
        return rest.get(flag + 2).cloned();
    }
    None
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
    substitutions: Vec<String>,
}

fn lex(text: &str) -> Lexed {
    let chars: Vec<char> = text.chars().collect();
    let mut lexed = Lexed {
        commands: Vec::new(),
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
            '\n' | ';' | '&' | '|' | '(' | ')' => {
                end_word(&mut word, &mut in_word, &mut words);
                lexed.commands.push(std::mem::take(&mut words));
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
    lexed.commands.retain(|words| !words.is_empty());
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
mod tests {
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
        for text in [
            "ralph-hooks task complete",
            "ralph-hooks task complete --summary 'all done'",
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
            "\"ralph-hooks\" task \\\n complete",
            "cargo run -q --bin ralph-hooks -- task complete",
            "ralph-hooks task --summary done complete",
        ] {
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

    #[test]
    fn substitutions_and_operators_split_commands() {
        let commands: Vec<String> = simple_commands("a 1 && b \"$(c 2)\" || d; e | f")
            .iter()
            .map(|w| w.join(" "))
            .collect();
        assert_eq!(commands, vec!["a 1", "b $(c 2)", "d", "e", "f", "c 2"]);
    }
}

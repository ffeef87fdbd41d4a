//! Colour on a terminal: whether to use it (`--color`, `NO_COLOR`,
//! `CLICOLOR_FORCE`, whether stdout is a terminal) and painting the two
//! kinds of text that gain from it — problem lists (the severity word) and
//! unified diffs (added, removed, hunk lines). Painting works on the
//! finished text, so the words are the same with and without colour;
//! JSON output is never painted.

use std::ffi::OsString;

use anstyle::{AnsiColor, Style};

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

/// Whether stdout gets colour. `--color always|never` wins; under `auto`
/// a non-empty `NO_COLOR` turns it off, a `CLICOLOR_FORCE` other than `0`
/// turns it on even in a pipe, and otherwise only a terminal (not `TERM=dumb`)
/// gets it.
pub fn enabled(
    when: ColorWhen,
    env: impl Fn(&str) -> Option<OsString>,
    stdout_is_terminal: bool,
) -> bool {
    let set = |name: &str| env(name).filter(|value| !value.is_empty());
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            if set("NO_COLOR").is_some() {
                false
            } else if set("CLICOLOR_FORCE").is_some_and(|value| value != "0") {
                true
            } else {
                stdout_is_terminal && env("TERM").is_none_or(|term| term != "dumb")
            }
        }
    }
}

/// How the CLI paints, decided once per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint {
    pub on: bool,
}

const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
const INFO: Style = AnsiColor::Blue.on_default();
const HINT: Style = AnsiColor::Cyan.on_default();
const ADDED: Style = AnsiColor::Green.on_default();
const REMOVED: Style = AnsiColor::Red.on_default();
const HUNK: Style = AnsiColor::Cyan.on_default();
const HEADER: Style = Style::new().bold();

impl Paint {
    pub fn new(on: bool) -> Paint {
        Paint { on }
    }

    /// Problem lines (`path:1:2 error [source code] message`, or
    /// `path:1:2: error …`): the severity word in its colour; other lines
    /// as they are.
    pub fn problems(&self, text: &str) -> String {
        if !self.on {
            return text.to_string();
        }
        map_lines(text, |line| match severity_word(line) {
            Some((start, word)) => {
                let style = match word {
                    "error" => ERROR,
                    "warning" => WARNING,
                    "info" => INFO,
                    _ => HINT,
                };
                let end = start + word.len();
                format!("{}{style}{word}{style:#}{}", &line[..start], &line[end..])
            }
            None => line.to_string(),
        })
    }

    /// A unified diff: `+` lines green, `-` lines red, `@@` cyan, the
    /// `---`/`+++` file lines bold.
    pub fn diff(&self, text: &str) -> String {
        if !self.on {
            return text.to_string();
        }
        map_lines(text, |line| {
            let style = if line.starts_with("+++ ") || line.starts_with("--- ") {
                HEADER
            } else if line.starts_with('+') {
                ADDED
            } else if line.starts_with('-') {
                REMOVED
            } else if line.starts_with("@@") {
                HUNK
            } else {
                return line.to_string();
            };
            format!("{style}{line}{style:#}")
        })
    }
}

/// Applies `paint` to each line, keeping the line ends as they were.
fn map_lines(text: &str, paint: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        out.push_str(&paint(body));
        out.push_str(end);
    }
    out
}

/// Where the severity word of a problem line starts: the first word after
/// `path:line:col` (with or without a colon after the column).
fn severity_word(line: &str) -> Option<(usize, &'static str)> {
    // The location ends at the first ":<digits>:<digits>" followed by a
    // space or ": ".
    let bytes = line.as_bytes();
    let mut index = 0;
    while let Some(offset) = line[index..].find(':') {
        let colon = index + offset;
        let after = &line[colon + 1..];
        let line_digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if line_digits > 0 && after.as_bytes().get(line_digits) == Some(&b':') {
            let rest = &after[line_digits + 1..];
            let col_digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if col_digits > 0 {
                let mut start = colon + 1 + line_digits + 1 + col_digits;
                if bytes.get(start) == Some(&b':') {
                    start += 1;
                }
                if bytes.get(start) != Some(&b' ') {
                    return None;
                }
                start += 1;
                for word in ["error", "warning", "info", "hint"] {
                    if line[start..].starts_with(word)
                        && matches!(bytes.get(start + word.len()), Some(b' ' | b':') | None)
                    {
                        return Some((start, word));
                    }
                }
                return None;
            }
        }
        index = colon + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        }
    }

    #[test]
    fn the_switches_decide_in_order() {
        use ColorWhen::*;
        assert!(enabled(Auto, env(&[]), true), "a terminal");
        assert!(!enabled(Auto, env(&[]), false), "a pipe");
        assert!(!enabled(Auto, env(&[("NO_COLOR", "1")]), true));
        assert!(
            enabled(Auto, env(&[("NO_COLOR", "")]), true),
            "empty is unset"
        );
        assert!(enabled(Auto, env(&[("CLICOLOR_FORCE", "1")]), false));
        assert!(!enabled(Auto, env(&[("CLICOLOR_FORCE", "0")]), false));
        assert!(
            !enabled(
                Auto,
                env(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]),
                true
            ),
            "NO_COLOR wins over CLICOLOR_FORCE"
        );
        assert!(!enabled(Auto, env(&[("TERM", "dumb")]), true));
        assert!(enabled(Always, env(&[("NO_COLOR", "1")]), false));
        assert!(!enabled(Never, env(&[("CLICOLOR_FORCE", "1")]), true));
    }

    #[test]
    fn severities_are_painted_and_nothing_else() {
        let text = "app/a.py:8:14 error [Pyright x] bad: worse\n    note: keep\nweb/i.ts:4:8 warning [ast-grep y] var\nChecked 2 files: 1 error\n";
        let painted = Paint::new(true).problems(text);
        assert!(
            painted.contains(
                "app/a.py:8:14 \u{1b}[1m\u{1b}[31merror\u{1b}[0m [Pyright x] bad: worse\n"
            ),
            "{painted:?}"
        );
        assert!(
            painted.contains("\u{1b}[33mwarning\u{1b}[0m [ast-grep y]"),
            "{painted:?}"
        );
        assert!(painted.ends_with("    note: keep\nweb/i.ts:4:8 \u{1b}[1m\u{1b}[33mwarning\u{1b}[0m [ast-grep y] var\nChecked 2 files: 1 error\n"), "{painted:?}");
        assert_eq!(Paint::new(false).problems(text), text);
        let colon_form = Paint::new(true).problems("a.py:1:2: error: x\n");
        assert!(colon_form.contains("31merror"), "{colon_form:?}");
        let windows_like = Paint::new(true).problems("C:12:3 fine\n");
        assert_eq!(windows_like, "C:12:3 fine\n");
    }

    #[test]
    fn diffs_are_painted_by_line_kind() {
        let diff = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-old\n+new\n same\n";
        let painted = Paint::new(true).diff(diff);
        let lines: Vec<&str> = painted.lines().collect();
        assert_eq!(lines[0], "\u{1b}[1m--- a/x.py\u{1b}[0m");
        assert_eq!(lines[3], "\u{1b}[31m-old\u{1b}[0m");
        assert_eq!(lines[4], "\u{1b}[32m+new\u{1b}[0m");
        assert_eq!(lines[2], "\u{1b}[36m@@ -1,2 +1,2 @@\u{1b}[0m");
        assert_eq!(lines[5], " same");
        assert_eq!(Paint::new(false).diff(diff), diff);
    }
}

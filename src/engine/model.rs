//! One diagnostic as we keep and show it: 1-based position, a severity, the
//! source and code, and the message folded onto one line.

use serde::{Deserialize, Serialize};

use crate::astgrep::{Finding, Level};
use crate::lsp::ServerDiagnostic;

/// LSP severities; the order is the priority (errors first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    #[serde(alias = "information")]
    Info,
    Hint,
}

impl Severity {
    /// LSP's number; a missing severity is up to the client, and an error is
    /// the safe reading.
    pub fn from_lsp(number: Option<i64>) -> Severity {
        match number {
            Some(2) => Severity::Warning,
            Some(3) => Severity::Info,
            Some(4) => Severity::Hint,
            _ => Severity::Error,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
            Severity::Hint => "hint",
        }
    }
}

/// How unused variables and imports are reported (issue 11, seed
/// AC-LSP-002). Servers send them as hints tagged `Unnecessary`, below the
/// default minimum severity; `warning` (the default) shows them to Claude.
/// There is no `error`: an unused name never blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnusedLevel {
    #[default]
    Warning,
    Info,
    Hint,
    /// As the server sent it (a hint, so not shown by default).
    Off,
}

impl UnusedLevel {
    fn severity(self) -> Option<Severity> {
        match self {
            UnusedLevel::Warning => Some(Severity::Warning),
            UnusedLevel::Info => Some(Severity::Info),
            UnusedLevel::Hint => Some(Severity::Hint),
            UnusedLevel::Off => None,
        }
    }
}

/// TypeScript's "declared but never read/used" family: 6133 (a local or
/// import), 6138 (a property), 6192 (all imports unused), 6196 (never used),
/// 6198/6199 (all destructured elements / variables), 6205 (type parameters).
const TS_UNUSED_CODES: &[&str] = &["6133", "6138", "6192", "6196", "6198", "6199", "6205"];

/// An unused variable or import: tagged `Unnecessary` (1) at hint or info
/// level, and by its code (TypeScript) or words (pyright's "is not
/// accessed") one of those — not every faded-out hint (unreachable code is
/// tagged `Unnecessary` too).
pub fn is_unused_name(diagnostic: &ServerDiagnostic) -> bool {
    let unnecessary = diagnostic
        .tags
        .as_ref()
        .is_some_and(|tags| tags.contains(&1));
    let quiet = matches!(diagnostic.severity, Some(3) | Some(4));
    if !unnecessary || !quiet {
        return false;
    }
    let code = diagnostic.code_text().unwrap_or_default();
    TS_UNUSED_CODES.contains(&code.as_str())
        || diagnostic.message.contains("is not accessed")
        || diagnostic.message.contains("is declared but")
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diag {
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters (LSP counts UTF-16 units; we convert).
    pub column: u32,
    pub severity: Severity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub message: String,
}

impl Diag {
    /// Converts a server's diagnostic, using the document text to turn the
    /// UTF-16 column into a character column.
    pub fn from_server(diagnostic: &ServerDiagnostic, text: &str) -> Diag {
        let start = diagnostic.range.start;
        let line_text = text.lines().nth(start.line as usize).unwrap_or_default();
        Diag {
            line: start.line.saturating_add(1),
            column: utf16_to_char_column(line_text, start.character).saturating_add(1),
            severity: Severity::from_lsp(diagnostic.severity),
            source: diagnostic.source.clone().filter(|s| !s.trim().is_empty()),
            code: diagnostic.code_text().filter(|c| !c.trim().is_empty()),
            message: fold_message(&diagnostic.message),
        }
    }

    /// [`Diag::from_server_as`] with the document already split into lines
    /// (a file with many diagnostics is not split once per diagnostic).
    pub fn from_server_lines(
        diagnostic: &ServerDiagnostic,
        lines: &[&str],
        unused: UnusedLevel,
    ) -> Diag {
        let start = diagnostic.range.start;
        let line_text = lines.get(start.line as usize).copied().unwrap_or_default();
        let mut diag = Diag {
            line: start.line.saturating_add(1),
            column: utf16_to_char_column(line_text, start.character).saturating_add(1),
            severity: Severity::from_lsp(diagnostic.severity),
            source: diagnostic.source.clone().filter(|s| !s.trim().is_empty()),
            code: diagnostic.code_text().filter(|c| !c.trim().is_empty()),
            message: fold_message(&diagnostic.message),
        };
        if let Some(severity) = unused.severity()
            && is_unused_name(diagnostic)
        {
            diag.severity = severity;
        }
        diag
    }

    /// [`Diag::from_server`], with unused variables and imports at the
    /// configured level.
    pub fn from_server_as(diagnostic: &ServerDiagnostic, text: &str, unused: UnusedLevel) -> Diag {
        let mut diag = Diag::from_server(diagnostic, text);
        if let Some(severity) = unused.severity()
            && is_unused_name(diagnostic)
        {
            diag.severity = severity;
        }
        diag
    }

    /// `path:line:col severity [source code] message`, with the control
    /// characters of the server's text escaped: it goes to Claude and to
    /// terminals as it is rendered here.
    pub fn render(&self, display_path: &str) -> String {
        use crate::util::text::escape_controls_in_prose as clean;
        let source = self.source.as_deref().map(clean);
        let code = self.code.as_deref().map(clean);
        let tag = match (source, code) {
            (Some(source), Some(code)) => format!(" [{source} {code}]"),
            (Some(source), None) => format!(" [{source}]"),
            (None, Some(code)) => format!(" [{code}]"),
            (None, None) => String::new(),
        };
        // A file name may hold a newline: it must not start a line of its own.
        let display_path = crate::util::text::escape_controls(display_path);
        format!(
            "{display_path}:{}:{} {}{tag} {}",
            self.line,
            self.column,
            self.severity.word(),
            crate::util::text::escape_controls_in_prose(&self.message)
        )
    }

    /// What makes two diagnostics "the same problem", position aside.
    pub fn same_problem(&self, other: &Diag) -> bool {
        self.severity == other.severity
            && self.source == other.source
            && self.code == other.code
            && self.message == other.message
    }

    /// Orders errors first, then by position.
    pub fn priority_key(&self) -> (Severity, u32, u32) {
        (self.severity, self.line, self.column)
    }
}

/// Multi-line messages on one line: pyright indents its second line with
/// NO-BREAK SPACEs, ruff adds a blank line before its `help:`.
pub fn fold_message(message: &str) -> String {
    message
        .lines()
        .map(|line| line.trim_matches(|c: char| c.is_whitespace() || c == '\u{a0}'))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" — ")
}

pub fn utf16_to_char_column(line: &str, utf16_offset: u32) -> u32 {
    let mut units = 0u32;
    let mut chars = 0u32;
    for character in line.chars() {
        if units >= utf16_offset {
            return chars;
        }
        units += character.len_utf16() as u32;
        chars += 1;
    }
    // Past the end of the line (or the line is unknown): keep the offset.
    if units >= utf16_offset {
        chars
    } else {
        chars + (utf16_offset - units)
    }
}

/// A rule's finding as a diagnostic (`source` ast-grep, `code` the rule id),
/// the same for the post-edit hook and the project check.
pub fn diag_from_finding(finding: &Finding) -> Diag {
    Diag {
        line: finding.line,
        column: finding.column,
        severity: match finding.severity {
            Level::Error => Severity::Error,
            Level::Warning => Severity::Warning,
            Level::Info => Severity::Info,
            Level::Hint => Severity::Hint,
        },
        source: Some("ast-grep".into()),
        code: Some(finding.rule_id.clone()),
        message: fold_message(&finding.message),
    }
}

/// A rule's note or fix text on one line (`⏎` between its lines); an empty
/// fix reads "(remove it)". A fix quotes the source (a string literal may
/// hold ESC or BEL): its control characters are escaped.
pub fn one_line(text: &str) -> String {
    crate::util::text::escape_controls_in_prose(&one_line_raw(text)).into_owned()
}

fn one_line_raw(text: &str) -> String {
    let folded: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if folded.is_empty() {
        "(remove it)".into()
    } else {
        folded.join(" ⏎ ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server(value: serde_json::Value) -> ServerDiagnostic {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_unused_names_are_promoted() {
        let range =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}});
        let unused_ts = server(
            json!({"range": range, "severity": 4, "code": 6133, "tags": [1],
            "message": "'x' is declared but its value is never read."}),
        );
        let unused_py = server(json!({"range": range, "severity": 4, "tags": [1],
            "message": "\"x\" is not accessed"}));
        let unreachable = server(
            json!({"range": range, "severity": 4, "code": 7027, "tags": [1],
            "message": "Unreachable code detected."}),
        );
        let untagged = server(json!({"range": range, "severity": 4, "code": 6133,
            "message": "'x' is declared but its value is never read."}));
        let error = server(
            json!({"range": range, "severity": 1, "code": 6133, "tags": [1],
            "message": "'x' is declared but its value is never read."}),
        );
        let level = |d: &ServerDiagnostic, unused| Diag::from_server_as(d, "x\n", unused).severity;
        assert_eq!(level(&unused_ts, UnusedLevel::Warning), Severity::Warning);
        assert_eq!(level(&unused_py, UnusedLevel::Warning), Severity::Warning);
        assert_eq!(level(&unused_py, UnusedLevel::Info), Severity::Info);
        assert_eq!(level(&unused_py, UnusedLevel::Off), Severity::Hint);
        assert_eq!(level(&unreachable, UnusedLevel::Warning), Severity::Hint);
        assert_eq!(level(&untagged, UnusedLevel::Warning), Severity::Hint);
        // noUnusedLocals makes it an error: left as the server says.
        assert_eq!(level(&error, UnusedLevel::Warning), Severity::Error);
    }

    #[test]
    fn pyright_diagnostic_renders_as_the_issue_shows() {
        let text = "def add(a: int, b: int) -> int:\n    return a + b\n\nresult: str = add(1, 2)\n";
        let diagnostic = server(json!({
            "range": {"start": {"line": 3, "character": 14}, "end": {"line": 3, "character": 23}},
            "severity": 1, "source": "Pyright", "code": "reportAssignmentType",
            "message": "Type \"int\" is not assignable to declared type \"str\"\n\u{a0}\u{a0}\"int\" is not assignable to \"str\""
        }));
        let diag = Diag::from_server(&diagnostic, text);
        assert_eq!(
            diag.render("src/app.py"),
            "src/app.py:4:15 error [Pyright reportAssignmentType] Type \"int\" is not assignable to declared type \"str\" — \"int\" is not assignable to \"str\""
        );
    }

    #[test]
    fn numeric_codes_missing_parts_and_utf16_columns() {
        // "é" is one UTF-16 unit, "😀" two; the error sits after both.
        let text = "let s = \"é😀\"; x\n";
        let diagnostic = server(json!({
            "range": {"start": {"line": 0, "character": 15}, "end": {"line": 0, "character": 16}},
            "code": 2304, "message": "Cannot find name 'x'."
        }));
        let diag = Diag::from_server(&diagnostic, text);
        assert_eq!(diag.column, 15);
        assert_eq!(
            diag.render("a.ts"),
            "a.ts:1:15 error [2304] Cannot find name 'x'."
        );
        assert_eq!(Severity::from_lsp(Some(4)), Severity::Hint);
    }

    #[test]
    fn ruff_help_is_folded() {
        assert_eq!(
            fold_message("`os` imported but unused\n\nhelp: Remove unused import: `os`"),
            "`os` imported but unused — help: Remove unused import: `os`"
        );
    }
}

//! One diagnostic as we keep and show it: 1-based position, a severity, the
//! source and code, and the message folded onto one line.

use serde::{Deserialize, Serialize};

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

    /// `path:line:col severity [source code] message`.
    pub fn render(&self, display_path: &str) -> String {
        let tag = match (&self.source, &self.code) {
            (Some(source), Some(code)) => format!(" [{source} {code}]"),
            (Some(source), None) => format!(" [{source}]"),
            (None, Some(code)) => format!(" [{code}]"),
            (None, None) => String::new(),
        };
        format!(
            "{display_path}:{}:{} {}{tag} {}",
            self.line,
            self.column,
            self.severity.word(),
            self.message
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server(value: serde_json::Value) -> ServerDiagnostic {
        serde_json::from_value(value).unwrap()
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

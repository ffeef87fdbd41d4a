//! `ralph-hooks fix`: the automatic fixes available for a file, applied in
//! memory in this order: the `fix` of ast-grep rules (built-in and the
//! project's), each server's `source.fixAll` (ruff), then one quick fix per
//! remaining diagnostic (the server's preferred one, or the only one it
//! offers; `codeAction/resolve` for actions that compute their edit
//! lazily). What remains is diagnosed again for the report.
//!
//! A file that does not parse is left alone, and a fix that would make a
//! file stop parsing is refused: `fix` never writes a broken file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::edits::{self, TextEdit};
use super::session::{Server, Session, provides};
use super::structural::read_source;
use super::writer::FileChange;
use crate::astgrep::{self, Lang, RuleSet};
use crate::lsp::{LspError, OpenFile, ServerDiagnostic, uri};

const NO_EDIT: &str = "the server gave no edit for it";
/// Passes over one file at most; a fix that keeps changing its own output
/// cannot loop forever.
const MAX_PASSES: usize = 4;

/// What `fix` found for one file.
#[derive(Debug, Clone, Default)]
pub struct FileFix {
    pub path: PathBuf,
    pub display: String,
    /// Before and after; equal when nothing applied.
    pub change: Option<FileChange>,
    /// One line per applied fix (`ast-grep no-var (line 3)`, `ruff: Fix all`).
    pub fixed: Vec<String>,
    /// One line per problem still there after the fixes.
    pub remaining: Vec<String>,
    /// Why the file was left alone, or what a server could not do.
    pub notes: Vec<String>,
}

impl FileFix {
    pub fn changed(&self) -> bool {
        self.change.as_ref().is_some_and(|c| c.before != c.after)
    }
}

pub fn fix_file(session: &mut Session<'_>, rules: Option<&RuleSet>, path: &Path) -> FileFix {
    let mut report = FileFix {
        path: path.to_path_buf(),
        display: session.display(path),
        ..FileFix::default()
    };
    let original = match read_source(path) {
        Ok(Some(text)) => text,
        Ok(None) => {
            report.notes.push("too large to fix".into());
            return report;
        }
        Err(why) => {
            report.notes.push(format!("not read: {why}"));
            return report;
        }
    };
    let lang = Lang::from_path(path);
    if let Some((line, column)) = lang.and_then(|lang| astgrep::syntax_error(lang, &original)) {
        report.notes.push(format!(
            "syntax error at {}:{line}:{column}; nothing fixed in this file",
            report.display
        ));
        report
            .remaining
            .push(format!("{}:{line}:{column}: syntax error", report.display));
        return report;
    }
    let servers = match session.servers_for(path) {
        Ok(servers) => servers,
        Err(error) => {
            report.notes.push(format!("{error:#}"));
            Vec::new()
        }
    };
    let mut checked = Checked::default();
    let mut text = original.clone();
    // Fixes that overlap an applied one (a `var` inside a `var`'s function)
    // and problems a fix uncovers get their turn in the next pass, until a
    // pass changes nothing.
    for _ in 0..MAX_PASSES {
        let pass_start = text.clone();
        if let Some(rules) = rules {
            text = rule_fixes(rules, path, &text, &mut report.fixed);
        }
        for server in &servers {
            touch(session, server, path, &text);
            // Before any code action request sends `text` itself.
            let _ = checked.diagnose(session, server, path, &text);
            text = fix_all(session, server, path, text, &mut report);
            text = quick_fixes(session, server, path, text, &mut report, &mut checked);
        }
        if text == pass_start {
            break;
        }
    }
    if text != original
        && let Some((line, column)) = lang.and_then(|lang| astgrep::syntax_error(lang, &text))
    {
        report.notes.push(format!(
            "the fixes would leave a syntax error at line {line}, column {column}; nothing written to this file"
        ));
        report.fixed.clear();
        text = original.clone();
    }
    remaining(
        session,
        rules,
        &servers,
        path,
        &text,
        &mut report,
        &mut checked,
    );
    report.change = Some(FileChange {
        path: path.to_path_buf(),
        before: original,
        after: text,
    });
    report
}

/// The rules' fixes, non-overlapping ones in one pass.
fn rule_fixes(rules: &RuleSet, path: &Path, text: &str, fixed: &mut Vec<String>) -> String {
    let mut edits = Vec::new();
    for finding in rules.scan_source(path, text) {
        let Some(fix) = finding.fix else {
            continue;
        };
        let overlaps = edits.iter().any(|e: &astgrep::TextEdit| {
            fix.start_byte < e.end_byte && e.start_byte < fix.end_byte
        });
        if overlaps {
            continue;
        }
        fixed.push(format!(
            "ast-grep {} (line {}): {}",
            finding.rule_id, finding.line, finding.message
        ));
        let (start_byte, end_byte) = if fix.replacement.is_empty() {
            removed_span(text, fix.start_byte, fix.end_byte)
        } else {
            (fix.start_byte, fix.end_byte)
        };
        edits.push(astgrep::TextEdit {
            start_byte,
            end_byte,
            replacement: fix.replacement,
            line: finding.line,
        });
    }
    astgrep::apply_edits(text, &edits)
}

/// What a fix that deletes `start..end` removes: the whole line, its
/// indentation and line break included, when nothing else is on it (a
/// removed `debugger;` must not leave a blank indented line behind);
/// otherwise exactly `start..end`.
fn removed_span(text: &str, start: usize, end: usize) -> (usize, usize) {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let blank = |piece: &str| piece.chars().all(|c| c == ' ' || c == '\t' || c == '\r');
    if !blank(&text[line_start..start]) || !blank(&text[end..line_end]) {
        return (start, end);
    }
    if line_end < text.len() {
        (line_start, line_end + 1)
    } else if line_start > 0 {
        // The last line, without a final newline: take the break before it.
        (line_start - 1, line_end)
    } else {
        (line_start, line_end)
    }
}

fn open(server: &Server, path: &Path, text: &str) -> Vec<OpenFile> {
    vec![OpenFile {
        path: path.to_path_buf(),
        text: text.to_string(),
        language_id: server.language_id.clone(),
    }]
}

fn whole_range(text: &str) -> Value {
    let lines = text.split('\n').count().max(1) - 1;
    json!({"start": {"line": 0, "character": 0}, "end": {"line": lines + 1, "character": 0}})
}

/// Whether the server's code actions can include `kind` (an options object
/// without `codeActionKinds` can include anything).
fn offers_kind(capabilities: Option<&Value>, kind: &str) -> bool {
    let Some(provider) = capabilities.and_then(|c| c.get("codeActionProvider")) else {
        return false;
    };
    if !provides(Some(provider)) {
        return false;
    }
    match provider.get("codeActionKinds").and_then(Value::as_array) {
        Some(kinds) => kinds.iter().filter_map(Value::as_str).any(|k| {
            k == kind || kind.starts_with(&format!("{k}.")) || k.starts_with(&format!("{kind}."))
        }),
        None => true,
    }
}

fn code_actions(
    session: &mut Session<'_>,
    server: &Server,
    path: &Path,
    text: &str,
    range: Value,
    diagnostics: Vec<Value>,
    only: &str,
) -> Result<Vec<Value>, LspError> {
    let params = json!({
        "textDocument": {"uri": uri::from_path(path)},
        "range": range,
        "context": {"diagnostics": diagnostics, "only": [only], "triggerKind": 1},
    });
    let result = session.request(
        server,
        &open(server, path, text),
        "textDocument/codeAction",
        params,
    )?;
    Ok(result
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        // A bare Command (no `kind`, a `command` string) is not an edit.
        .filter(|action| !action.get("command").is_some_and(Value::is_string))
        .filter(|action| {
            action
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|kind| kind == only || kind.starts_with(&format!("{only}.")))
        })
        .filter(|action| action.get("disabled").is_none())
        .collect())
}

/// The action's edits for `path`, resolving the edit when the server left
/// it out; `Err` says why the action cannot be applied.
fn action_edits(
    session: &mut Session<'_>,
    server: &Server,
    path: &Path,
    text: &str,
    action: &Value,
) -> Result<Vec<TextEdit>, String> {
    let mut action = action.clone();
    if action.get("edit").is_none() {
        let resolvable = session
            .capabilities(server)
            .and_then(|c| c.pointer("/codeActionProvider/resolveProvider"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !resolvable {
            return Err("it only runs a command, and ralph-hooks runs no server commands".into());
        }
        action = session
            .request(
                server,
                &open(server, path, text),
                "codeAction/resolve",
                action,
            )
            .map_err(|e| format!("codeAction/resolve failed: {e}"))?;
    }
    let Some(edit) = action.get("edit") else {
        return Err(NO_EDIT.into());
    };
    let by_file = edits::workspace_edit(edit).map_err(|e| format!("{e:#}"))?;
    let key = uri::comparable(path);
    let mut mine = Vec::new();
    for (file, file_edits) in by_file {
        if uri::comparable(&file) != key {
            return Err(format!("it also edits {}", file.display()));
        }
        mine.extend(file_edits);
    }
    Ok(mine)
}

fn title(action: &Value) -> String {
    action
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("fix")
        .to_string()
}

/// Each server's diagnostics of the text it was last sent in this run. A
/// server that already has a text publishes nothing when sent it again
/// (typescript-language-server, clangd), so a text is diagnosed once and
/// its diagnostics reused.
#[derive(Default)]
struct Checked(HashMap<String, (String, Vec<ServerDiagnostic>)>);

impl Checked {
    fn diagnose(
        &mut self,
        session: &mut Session<'_>,
        server: &Server,
        path: &Path,
        text: &str,
    ) -> Result<Vec<ServerDiagnostic>, LspError> {
        if let Some((sent, diagnostics)) = self.0.get(&server.name)
            && sent == text
        {
            return Ok(diagnostics.clone());
        }
        let diagnostics = session.diagnose(server, path, text)?;
        self.0
            .insert(server.name.clone(), (text.to_string(), diagnostics.clone()));
        Ok(diagnostics)
    }
}

/// Prepares a server for the first check of `text` in this run. A warm
/// server may have `text` open from an earlier run already, and some
/// servers publish nothing for a change that leaves the diagnostics as
/// they were (typescript-language-server), so waiting for `text`'s
/// diagnostics could wait for ever. Checking first a copy with a stray `)`
/// appended (a syntax error in every language here) makes the next check
/// of `text` a change with different diagnostics, which every server
/// publishes. Then a harmless request teaches the session the server's
/// capabilities (a refusal carries them too), with the same copy, so
/// nothing sends `text` before it is checked.
fn touch(session: &mut Session<'_>, server: &Server, path: &Path, text: &str) {
    let touched = format!("{text}\n)\n");
    let _ = session.diagnose(server, path, &touched);
    let params = json!({"textDocument": {"uri": uri::from_path(path)}});
    let _ = session.request(
        server,
        &open(server, path, &touched),
        "textDocument/documentSymbol",
        params,
    );
}

/// The server's `source.fixAll` actions (ruff's "Fix all auto-fixable
/// problems"), applied one after another.
fn fix_all(
    session: &mut Session<'_>,
    server: &Server,
    path: &Path,
    mut text: String,
    report: &mut FileFix,
) -> String {
    if !provides(
        session
            .capabilities(server)
            .and_then(|c| c.get("codeActionProvider")),
    ) {
        report.notes.push(
            super::session::unsupported(server, "code actions", "codeActionProvider").to_string(),
        );
        return text;
    }
    if !offers_kind(session.capabilities(server), "source.fixAll") {
        return text;
    }
    let actions = match code_actions(
        session,
        server,
        path,
        &text,
        whole_range(&text),
        Vec::new(),
        "source.fixAll",
    ) {
        Ok(actions) => actions,
        Err(error) => {
            report
                .notes
                .push(format!("{}: source.fixAll failed: {error}", server.name));
            return text;
        }
    };
    for action in actions {
        match action_edits(session, server, path, &text, &action)
            .and_then(|e| edits::apply(&text, &e).map_err(|e| format!("{e:#}")))
        {
            Ok(after) if after != text => {
                report
                    .fixed
                    .push(format!("{}: {}", server.name, title(&action)));
                text = after;
            }
            Ok(_) => {}
            // An empty "fix all" (typescript-language-server's, with
            // nothing to fix) is not worth a note.
            Err(why) if why == NO_EDIT => {}
            Err(why) => report.notes.push(format!(
                "{}: {:?} not applied: {why}",
                server.name,
                title(&action)
            )),
        }
    }
    text
}

/// Whether a code action only silences the diagnostic (`# ty: ignore[…]`,
/// `# noqa`, `// @ts-ignore`, "Disable … for this line"): servers offer
/// these as quick fixes, but they hide the problem instead of fixing it.
fn is_suppression(action: &Value) -> bool {
    let title = action
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_lowercase();
    ["ignore", "suppress", "disable", "add noqa", "noqa"]
        .iter()
        .any(|word| title.starts_with(word))
        || title.contains("@ts-ignore")
        || title.contains("@ts-expect-error")
        || title.contains("type: ignore")
}

/// One quick fix per diagnostic of the current text: the preferred action,
/// else the only one offered. Fixes that overlap an earlier one wait for
/// the next run.
fn quick_fixes(
    session: &mut Session<'_>,
    server: &Server,
    path: &Path,
    text: String,
    report: &mut FileFix,
    checked: &mut Checked,
) -> String {
    // Checked first: the code action requests below send the same text.
    let diagnostics = match checked.diagnose(session, server, path, &text) {
        Ok(diagnostics) => diagnostics,
        Err(error) => {
            report.notes.push(format!("{}: {error}", server.name));
            return text;
        }
    };
    if !offers_kind(session.capabilities(server), "quickfix") {
        return text;
    }
    let mut chosen: Vec<TextEdit> = Vec::new();
    let mut titles = Vec::new();
    for diagnostic in &diagnostics {
        let Ok(value) = serde_json::to_value(diagnostic) else {
            continue;
        };
        let range = value.get("range").cloned().unwrap_or(Value::Null);
        let actions =
            match code_actions(session, server, path, &text, range, vec![value], "quickfix") {
                Ok(actions) => actions,
                Err(error) => {
                    report
                        .notes
                        .push(format!("{}: quickfix failed: {error}", server.name));
                    continue;
                }
            };
        // A comment that silences the checker is not a fix.
        let actions: Vec<&Value> = actions.iter().filter(|a| !is_suppression(a)).collect();
        let pick = actions
            .iter()
            .find(|a| a.get("isPreferred").and_then(Value::as_bool) == Some(true))
            .or(if actions.len() == 1 {
                actions.first()
            } else {
                None
            })
            .copied();
        let Some(action) = pick else {
            continue;
        };
        match action_edits(session, server, path, &text, action) {
            Ok(found) => {
                let mut candidate = chosen.clone();
                candidate.extend(found.iter().cloned());
                if edits::apply(&text, &candidate).is_ok() {
                    chosen = candidate;
                    titles.push(format!(
                        "{}: {} (line {})",
                        server.name,
                        title(action),
                        diagnostic.range.start.line + 1
                    ));
                }
            }
            Err(why) => report.notes.push(format!(
                "{}: {:?} not applied: {why}",
                server.name,
                title(action)
            )),
        }
    }
    match edits::apply(&text, &chosen) {
        Ok(after) => {
            report.fixed.extend(titles);
            after
        }
        Err(_) => text,
    }
}

/// The problems left in `text`: every server's diagnostics and the rule
/// findings.
fn remaining(
    session: &mut Session<'_>,
    rules: Option<&RuleSet>,
    servers: &[Server],
    path: &Path,
    text: &str,
    report: &mut FileFix,
    checked: &mut Checked,
) {
    for server in servers {
        match checked.diagnose(session, server, path, text) {
            Ok(diagnostics) => {
                // Hints ("is not accessed") are not problems to fix.
                for d in diagnostics.iter().filter(|d| d.severity.unwrap_or(1) <= 2) {
                    report.remaining.push(describe(&report.display, server, d));
                }
            }
            Err(error) => report.notes.push(format!("{}: {error}", server.name)),
        }
    }
    if let Some(rules) = rules {
        for finding in rules.scan_source(path, text) {
            report.remaining.push(format!(
                "{}:{}:{}: {} [ast-grep {}]",
                report.display, finding.line, finding.column, finding.message, finding.rule_id
            ));
        }
    }
}

fn describe(display: &str, server: &Server, d: &ServerDiagnostic) -> String {
    let severity = match d.severity {
        Some(2) => "warning",
        Some(3) => "info",
        Some(4) => "hint",
        _ => "error",
    };
    format!(
        "{display}:{}:{}: {severity}: {} [{}]",
        d.range.start.line + 1,
        d.range.start.character + 1,
        d.message.lines().next().unwrap_or(""),
        server.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_statement_takes_its_line_with_it() {
        let text = "function g() {\n  debugger;\n  return legacy;\n}";
        let start = text.find("debugger").unwrap();
        let end = start + "debugger;".len();
        let (from, to) = removed_span(text, start, end);
        let after = format!("{}{}", &text[..from], &text[to..]);
        assert_eq!(after, "function g() {\n  return legacy;\n}");
        // Something else on the line: only the statement goes.
        let text = "a(); debugger; b();\n";
        let start = text.find("debugger").unwrap();
        assert_eq!(removed_span(text, start, start + 9), (start, start + 9));
        // The last line without a newline.
        let text = "a();\ndebugger;";
        assert_eq!(removed_span(text, 5, 14), (4, 14));
    }

    #[test]
    fn suppressions_are_not_fixes() {
        for title in [
            "Ignore 'unresolved-reference' for this line",
            "Disable reportAttributeAccessIssue for this line",
            "Suppress F401",
            "Add `# noqa: F821`",
            "Add '@ts-ignore' to suppress this error",
            "Add # type: ignore",
        ] {
            let title = title.replace("Add `# noqa", "Add noqa");
            assert!(is_suppression(&json!({"title": title})), "{title}");
        }
        for title in [
            "Remove unused import: `os`",
            "Import 'helper' from module",
            "Change to const",
        ] {
            assert!(!is_suppression(&json!({"title": title})), "{title}");
        }
    }
}

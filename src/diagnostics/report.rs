//! The text Claude reads: which of clean / issues found / inconclusive /
//! not installed it is, then the diagnostics, errors first, one per line as
//! `path:line:col severity [source code] message`, capped by count and
//! characters with "… and N more".

use std::fmt::Write as _;

use super::classify::{Classified, Origin};
use crate::engine::listing::{Caps, capped_lines, clean_phrase, counts};
use crate::engine::model::{Diag, Severity};

fn sorted<'a>(items: impl Iterator<Item = &'a Diag>) -> Vec<&'a Diag> {
    let mut list: Vec<&Diag> = items.collect();
    list.sort_by_key(|d| d.priority_key());
    list
}

fn render_all<'a>(diags: &[&'a Diag], display_path: &str) -> Vec<(&'a Diag, String)> {
    diags.iter().map(|d| (*d, d.render(display_path))).collect()
}

/// The context after a conclusive check of an edited file.
pub fn edit_context(
    display_path: &str,
    server: &str,
    items: &[Classified],
    fixed: &[Diag],
    min_severity: Severity,
    caps: Caps,
) -> String {
    let mut text = String::new();
    let fixed_note = match fixed.len() {
        0 => String::new(),
        n => format!(
            " This edit fixed {n} earlier problem(s): {}.",
            counts(fixed)
        ),
    };
    if items.is_empty() {
        let _ = write!(
            text,
            "LSP diagnostics for {display_path} ({server}): clean — {}.{fixed_note}",
            clean_phrase(min_severity)
        );
        return text;
    }
    let _ = writeln!(
        text,
        "LSP diagnostics for {display_path} ({server}): issues found — {}.{fixed_note}",
        counts(items.iter().map(|c| &c.diag))
    );
    text.push_str(&grouped(display_path, items, caps));
    text.trim_end().to_string()
}

/// The findings of the checks that did answer, when another (a server
/// timing out or warming up) did not: never "clean", since the silent
/// server's findings are missing.
pub fn partial_context(
    display_path: &str,
    answered: &str,
    items: &[Classified],
    caps: Caps,
) -> String {
    if items.is_empty() {
        return format!(
            "Meanwhile {answered} found nothing in {display_path} (that is not clean: the server above did not check it)."
        );
    }
    let mut text = format!(
        "Meanwhile {answered} found in {display_path}: {}.\n",
        counts(items.iter().map(|c| &c.diag))
    );
    text.push_str(&grouped(display_path, items, caps));
    text.trim_end().to_string()
}

/// The items by origin (introduced, already there, unknown), capped.
fn grouped(display_path: &str, items: &[Classified], caps: Caps) -> String {
    let mut text = String::new();
    let groups = [
        (Origin::Introduced, "Introduced by this edit"),
        (Origin::PreExisting, "Already there before this edit"),
        (
            Origin::Unknown,
            "Found (no earlier result for this file, so new and old cannot be told apart)",
        ),
    ];
    let mut used = Caps {
        max_items: 0,
        max_chars: 0,
    };
    for (origin, title) in groups {
        let group = sorted(items.iter().filter(|c| c.origin == origin).map(|c| &c.diag));
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(text, "{title} ({}):", group.len());
        text.push_str(&capped_lines(
            &render_all(&group, display_path),
            caps,
            &mut used,
        ));
    }
    text
}

/// The reason of a block: the errors Claude must fix now.
pub fn block_reason(
    display_path: &str,
    server: &str,
    errors: &[&Diag],
    introduced: bool,
    caps: Caps,
) -> String {
    let mut text = String::new();
    let what = if introduced {
        "This edit introduced"
    } else {
        "The file still has"
    };
    let _ = writeln!(
        text,
        "{what} {} in {display_path} (reported by {server}). A Ralph loop is running: fix {} before going on.",
        counts(errors.iter().copied()),
        if errors.len() == 1 { "it" } else { "them" }
    );
    let mut used = Caps {
        max_items: 0,
        max_chars: 0,
    };
    text.push_str(&capped_lines(
        &render_all(&sorted(errors.iter().copied()), display_path),
        caps,
        &mut used,
    ));
    text.trim_end().to_string()
}

pub fn inconclusive(display_path: &str, server: &str, reason: &str) -> String {
    format!(
        "LSP diagnostics for {display_path} ({server}): inconclusive — {reason}. The file was not checked: do not take this as clean."
    )
}

/// The server is running (it answered `initialize`) but gave no answer
/// for this file in the edit's time: not clean, asked again next edit.
pub fn timed_out(display_path: &str, server: &str, reason: &str) -> String {
    format!(
        "LSP diagnostics for {display_path} ({server}): inconclusive — timed out: {reason}. {server} is running but did not answer for this file in time{why}; it is asked again at the next edit. The file was not checked by it: do not take this as clean.",
        why = if reason.contains(crate::lsp::client::FIRST_CHECK_PENDING) {
            ""
        } else {
            " (busy or stuck)"
        }
    )
}

/// The server is still starting: not broken, not clean, checked next time.
pub fn warming_up(display_path: &str, server: &str, waited_secs: f64) -> String {
    format!(
        "LSP diagnostics for {display_path} ({server}): warming up — the server is still starting and loading the project ({waited_secs:.1} s so far); this file is checked on the next edit. Not checked yet: do not take this as clean."
    )
}

/// The server did not come up: said once per session (then nothing, so a
/// broken server does not repeat itself at every edit), never as clean.
pub fn not_started(display_path: &str, reason: &str) -> String {
    format!(
        "LSP diagnostics for {display_path}: inconclusive — not checked: {reason}. It is not started again for a while, so later edits are not checked either until it is fixed (`ralph-hooks doctor`, `ralph-hooks daemon status`). Do not take unchecked files as clean."
    )
}

pub fn not_installed(language: &str, tried: &[String], hint: &str) -> String {
    format!(
        "LSP diagnostics: no {language} language server is installed (looked for {}), so {language} files are not checked after edits. Install one: {hint}",
        tried.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(line: u32, severity: Severity, message: &str) -> Diag {
        Diag {
            line,
            column: 1,
            severity,
            source: Some("S".into()),
            code: Some("C".into()),
            message: message.into(),
        }
    }

    #[test]
    fn errors_first_grouped_by_origin_and_capped() {
        let mut items = Vec::new();
        for line in 1..=5 {
            items.push(Classified {
                diag: diag(line, Severity::Warning, "w"),
                origin: Origin::PreExisting,
            });
        }
        items.push(Classified {
            diag: diag(9, Severity::Warning, "new warning"),
            origin: Origin::Introduced,
        });
        items.push(Classified {
            diag: diag(7, Severity::Error, "new error"),
            origin: Origin::Introduced,
        });
        let text = edit_context(
            "a.py",
            "pyright",
            &items,
            &[],
            Severity::Warning,
            Caps {
                max_items: 4,
                max_chars: 4_000,
            },
        );
        assert_eq!(
            text,
            "LSP diagnostics for a.py (pyright): issues found — 1 error, 6 warnings.\n\
             Introduced by this edit (2):\n\
             a.py:7:1 error [S C] new error\n\
             a.py:9:1 warning [S C] new warning\n\
             Already there before this edit (5):\n\
             a.py:1:1 warning [S C] w\n\
             a.py:2:1 warning [S C] w\n\
             … and 3 more (3 warnings)"
        );
    }

    #[test]
    fn clean_with_a_fix() {
        let text = edit_context(
            "a.py",
            "pyright",
            &[],
            &[diag(3, Severity::Error, "x")],
            Severity::Warning,
            Caps {
                max_items: 20,
                max_chars: 4_000,
            },
        );
        assert_eq!(
            text,
            "LSP diagnostics for a.py (pyright): clean — no errors or warnings. This edit fixed 1 earlier problem(s): 1 error."
        );
    }

    #[test]
    fn char_cap_cuts_long_lists() {
        let long = "x".repeat(100);
        let diags: Vec<Diag> = (1..=10).map(|l| diag(l, Severity::Error, &long)).collect();
        let refs: Vec<&Diag> = diags.iter().collect();
        let text = block_reason(
            "a.py",
            "pyright",
            &refs,
            true,
            Caps {
                max_items: 20,
                max_chars: 350,
            },
        );
        assert!(text.ends_with("… and 8 more (8 errors)"), "{text}");
        assert!(
            text.starts_with("This edit introduced 10 errors in a.py"),
            "{text}"
        );
    }
}

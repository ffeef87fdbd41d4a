//! Lists of diagnostics as people and Claude read them: counts by severity
//! ("1 error, 2 warnings"), what "clean" means at a minimum severity, and a
//! list capped by lines and characters that ends with "… and N more".

use std::fmt::Write as _;

use super::model::{Diag, Severity};

/// Limits for one list of diagnostics.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub max_items: usize,
    pub max_chars: usize,
}

/// "1 error, 2 warnings" (only the severities present).
pub fn counts<'a>(diags: impl IntoIterator<Item = &'a Diag>) -> String {
    let mut n = [0usize; 4];
    for diag in diags {
        n[diag.severity as usize] += 1;
    }
    let names = [
        ("error", "errors"),
        ("warning", "warnings"),
        ("info", "infos"),
        ("hint", "hints"),
    ];
    let parts: Vec<String> = n
        .iter()
        .zip(names)
        .filter(|(count, _)| **count > 0)
        .map(|(count, (one, many))| format!("{count} {}", if *count == 1 { one } else { many }))
        .collect();
    if parts.is_empty() {
        "nothing".into()
    } else {
        parts.join(", ")
    }
}

/// What "clean" means at this minimum severity.
pub fn clean_phrase(min_severity: Severity) -> &'static str {
    match min_severity {
        Severity::Error => "no errors",
        Severity::Warning => "no errors or warnings",
        Severity::Info | Severity::Hint => "no diagnostics",
    }
}

/// Rendered lines under the caps; the rest summarised as "… and N more".
pub fn capped_lines(diags: &[(&Diag, String)], caps: Caps, used: &mut Caps) -> String {
    let mut text = String::new();
    let mut shown = 0;
    for (_, line) in diags {
        let line_chars = line.chars().count() + 1;
        if used.max_items >= caps.max_items || used.max_chars + line_chars > caps.max_chars {
            break;
        }
        text.push_str(line);
        text.push('\n');
        used.max_items += 1;
        used.max_chars += line_chars;
        shown += 1;
    }
    if shown < diags.len() {
        let rest = &diags[shown..];
        let _ = writeln!(
            text,
            "… and {} more ({})",
            rest.len(),
            counts(rest.iter().map(|(d, _)| *d))
        );
    }
    text
}

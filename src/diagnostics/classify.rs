//! Introduced by this edit, or already there? Pure: the diagnostics before,
//! the diagnostics after and the line-shift map in; each new diagnostic
//! labelled, and the old ones that went away listed as fixed.
//!
//! A new diagnostic is "already there" when the same problem (severity,
//! source, code, message) was reported before on the line that became its
//! line, or, when it sits in text the edit rewrote, on a line the edit
//! rewrote (the problem was in the replaced text too). Everything else is
//! introduced — including an error on an untouched line that the edit caused
//! elsewhere, like a call site broken by a changed signature.

use serde::Serialize;

use super::lines::LineMap;
use crate::engine::model::Diag;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Introduced,
    PreExisting,
    /// No baseline to compare with.
    Unknown,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Classified {
    pub diag: Diag,
    pub origin: Origin,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Classification {
    pub items: Vec<Classified>,
    /// Diagnostics of the old text that are gone.
    pub fixed: Vec<Diag>,
}

pub fn classify(before: Option<&[Diag]>, after: &[Diag], map: &LineMap) -> Classification {
    let Some(before) = before else {
        return Classification {
            items: after
                .iter()
                .map(|diag| Classified {
                    diag: diag.clone(),
                    origin: Origin::Unknown,
                })
                .collect(),
            fixed: Vec::new(),
        };
    };
    let mapped: Vec<Option<u32>> = before.iter().map(|old| map.map(old.line)).collect();
    let mut old_used = vec![false; before.len()];
    let mut origins = vec![Origin::Introduced; after.len()];

    // Pass 1: the same problem on the line that moved here.
    for (new_index, new) in after.iter().enumerate() {
        if let Some(old_index) = (0..before.len())
            .find(|&i| !old_used[i] && mapped[i] == Some(new.line) && before[i].same_problem(new))
        {
            old_used[old_index] = true;
            origins[new_index] = Origin::PreExisting;
        }
    }
    // Pass 2: in rewritten text, the same problem on a rewritten line.
    for (new_index, new) in after.iter().enumerate() {
        if origins[new_index] != Origin::Introduced || !map.is_new_text(new.line) {
            continue;
        }
        if let Some(old_index) = (0..before.len())
            .find(|&i| !old_used[i] && mapped[i].is_none() && before[i].same_problem(new))
        {
            old_used[old_index] = true;
            origins[new_index] = Origin::PreExisting;
        }
    }

    Classification {
        items: after
            .iter()
            .zip(origins)
            .map(|(diag, origin)| Classified {
                diag: diag.clone(),
                origin,
            })
            .collect(),
        fixed: before
            .iter()
            .zip(old_used)
            .filter(|(_, used)| !used)
            .map(|(diag, _)| diag.clone())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::Severity;

    fn diag(line: u32, severity: Severity, message: &str) -> Diag {
        Diag {
            line,
            column: 1,
            severity,
            source: Some("Pyright".into()),
            code: None,
            message: message.into(),
        }
    }

    fn origins(result: &Classification) -> Vec<(u32, Origin)> {
        result
            .items
            .iter()
            .map(|c| (c.diag.line, c.origin))
            .collect()
    }

    #[test]
    fn lines_inserted_above_keep_old_errors_old() {
        let old = "a\nb = undefined_one\nc\n";
        let new = "import x\nimport y\na\nb = undefined_one\nc\nd = undefined_two\n";
        let map = LineMap::from_texts(old, new);
        let before = vec![diag(2, Severity::Error, "\"undefined_one\" is not defined")];
        let after = vec![
            diag(4, Severity::Error, "\"undefined_one\" is not defined"),
            diag(6, Severity::Error, "\"undefined_two\" is not defined"),
        ];
        let result = classify(Some(&before), &after, &map);
        assert_eq!(
            origins(&result),
            vec![(4, Origin::PreExisting), (6, Origin::Introduced)]
        );
        assert!(result.fixed.is_empty());
    }

    #[test]
    fn lines_deleted_above_and_a_fix() {
        let old = "import x\nimport y\nbad_one\nok\nbad_two\n";
        let new = "bad_one\nok\nfixed\n";
        let map = LineMap::from_texts(old, new);
        let before = vec![
            diag(3, Severity::Error, "bad one"),
            diag(5, Severity::Error, "bad two"),
        ];
        let after = vec![diag(1, Severity::Error, "bad one")];
        let result = classify(Some(&before), &after, &map);
        assert_eq!(origins(&result), vec![(1, Origin::PreExisting)]);
        assert_eq!(result.fixed, vec![diag(5, Severity::Error, "bad two")]);
    }

    #[test]
    fn same_message_elsewhere_is_still_new() {
        // An identical message already reported on another, untouched line
        // does not make a new occurrence "already there".
        let old = "x: str = 1\ny = 2\n";
        let new = "x: str = 1\ny: str = 2\n";
        let map = LineMap::from_texts(old, new);
        let message = "Type \"int\" is not assignable to declared type \"str\"";
        let before = vec![diag(1, Severity::Error, message)];
        let after = vec![
            diag(1, Severity::Error, message),
            diag(2, Severity::Error, message),
        ];
        let result = classify(Some(&before), &after, &map);
        assert_eq!(
            origins(&result),
            vec![(1, Origin::PreExisting), (2, Origin::Introduced)]
        );
    }

    #[test]
    fn a_rewritten_line_keeping_its_problem_is_not_new() {
        let old = "a\nvalue: str = compute( 1 )\nb\n";
        let new = "a\nvalue: str = compute(1)\nb\n";
        let map = LineMap::from_texts(old, new);
        let before = vec![diag(2, Severity::Error, "wrong type")];
        let after = vec![diag(2, Severity::Error, "wrong type")];
        let result = classify(Some(&before), &after, &map);
        assert_eq!(origins(&result), vec![(2, Origin::PreExisting)]);
    }

    #[test]
    fn severity_change_counts_as_new() {
        let map = LineMap::identity();
        let before = vec![diag(1, Severity::Warning, "m")];
        let after = vec![diag(1, Severity::Error, "m")];
        let result = classify(Some(&before), &after, &map);
        assert_eq!(origins(&result), vec![(1, Origin::Introduced)]);
        assert_eq!(result.fixed.len(), 1);
    }

    #[test]
    fn no_baseline_means_unknown() {
        let after = vec![diag(1, Severity::Error, "m")];
        let result = classify(None, &after, &LineMap::identity());
        assert_eq!(origins(&result), vec![(1, Origin::Unknown)]);
    }
}

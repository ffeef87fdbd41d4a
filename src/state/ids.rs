//! Ids that come from input (session, task, step, spec, loop) are checked
//! here before they become part of a path.

use anyhow::bail;

/// Longest id we accept; real ids (UUIDs, `task_…`, `SPEC-…`) are far shorter.
const MAX_ID_LEN: usize = 128;

/// Accepts `[A-Za-z0-9][A-Za-z0-9._-]*` up to 128 characters, without `..`.
/// That rules out separators, traversal, hidden files and empty names.
pub fn check(kind: &str, id: &str) -> anyhow::Result<()> {
    let first_ok = id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    let rest_ok = id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if id.is_empty() || id.len() > MAX_ID_LEN || !first_ok || !rest_ok || id.contains("..") {
        bail!(
            "invalid {kind} id {id:?}: use letters, digits, '.', '_' and '-' (starting with a letter or digit, at most {MAX_ID_LEN} characters)"
        );
    }
    Ok(())
}

pub fn is_valid(id: &str) -> bool {
    check("", id).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_real_ids() {
        for id in [
            "4efbd548-7240-4fa7-8627-6feebe9eaaf3",
            "task_1",
            "SPEC-AUTH-001",
            "s12",
            "loop-20261121T204500Z",
        ] {
            assert!(is_valid(id), "{id}");
        }
    }

    #[test]
    fn rejects_path_tricks() {
        for id in [
            "",
            "..",
            "../x",
            "a/b",
            "a\\b",
            ".hidden",
            "a..b",
            "x\0y",
            "é",
            &"a".repeat(129),
        ] {
            assert!(!is_valid(id), "{id:?}");
        }
    }
}

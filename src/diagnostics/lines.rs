//! Where each line of the file before an edit is after it: the line-shift
//! map that lets "already there" survive an edit that moved it.
//!
//! Built from the Edit tool's `structuredPatch` (unified-diff hunks) when the
//! tool response has one, else from a line diff of `originalFile` and the
//! new text.

use serde_json::Value;

/// One unified-diff hunk; `lines` start with ' ', '-' or '+'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
    pub lines: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct LineMap {
    hunks: Vec<Hunk>,
}

impl LineMap {
    /// No change: every line stays where it was.
    pub fn identity() -> LineMap {
        LineMap::default()
    }

    /// From `tool_response.structuredPatch`; `None` when it is missing,
    /// empty or malformed.
    pub fn from_patch(patch: &Value) -> Option<LineMap> {
        let hunks = patch.as_array()?;
        if hunks.is_empty() {
            return None;
        }
        let number = |hunk: &Value, key: &str| -> Option<u32> {
            hunk.get(key)?.as_u64().and_then(|n| u32::try_from(n).ok())
        };
        let mut parsed = Vec::with_capacity(hunks.len());
        for hunk in hunks {
            let lines = hunk
                .get("lines")?
                .as_array()?
                .iter()
                .map(|line| line.as_str().map(str::to_string))
                .collect::<Option<Vec<String>>>()?;
            let hunk = Hunk {
                old_start: number(hunk, "oldStart")?,
                old_lines: number(hunk, "oldLines")?,
                new_start: number(hunk, "newStart")?,
                new_lines: number(hunk, "newLines")?,
                lines,
            };
            let n_old = hunk
                .lines
                .iter()
                .filter(|l| l.starts_with(' ') || l.starts_with('-'))
                .count();
            let n_new = hunk
                .lines
                .iter()
                .filter(|l| l.starts_with(' ') || l.starts_with('+'))
                .count();
            if n_old != hunk.old_lines as usize || n_new != hunk.new_lines as usize {
                return None;
            }
            parsed.push(hunk);
        }
        parsed.sort_by_key(|h| h.old_start);
        Some(LineMap { hunks: parsed })
    }

    /// From a line diff of the text before and after.
    pub fn from_texts(old: &str, new: &str) -> LineMap {
        LineMap {
            hunks: diff_hunks(old, new),
        }
    }

    /// The new 1-based line of old line `old_line`; `None` when the edit
    /// removed or rewrote it.
    pub fn map(&self, old_line: u32) -> Option<u32> {
        let mut delta: i64 = 0;
        for hunk in &self.hunks {
            // A pure insertion (`-N,0`) goes after old line N.
            let before = if hunk.old_lines == 0 {
                old_line <= hunk.old_start
            } else {
                old_line < hunk.old_start
            };
            if before {
                break;
            }
            if hunk.old_lines > 0 && old_line < hunk.old_start + hunk.old_lines {
                let mut old_cursor = hunk.old_start;
                let mut new_cursor = hunk.new_start;
                for line in &hunk.lines {
                    match line.as_bytes().first() {
                        Some(b' ') => {
                            if old_cursor == old_line {
                                return Some(new_cursor);
                            }
                            old_cursor += 1;
                            new_cursor += 1;
                        }
                        Some(b'-') => {
                            if old_cursor == old_line {
                                return None;
                            }
                            old_cursor += 1;
                        }
                        Some(b'+') => new_cursor += 1,
                        _ => {}
                    }
                }
                return None;
            }
            // The first line after the hunk, on each side: a zero-length
            // side names the line before it.
            let after = |start: u32, count: u32| i64::from(start) + i64::from(count.max(1));
            delta = after(hunk.new_start, hunk.new_lines) - after(hunk.old_start, hunk.old_lines);
        }
        u32::try_from(i64::from(old_line) + delta).ok()
    }

    /// Whether new line `new_line` was written by the edit.
    pub fn is_new_text(&self, new_line: u32) -> bool {
        self.hunks.iter().any(|hunk| {
            let mut new_cursor = hunk.new_start;
            for line in &hunk.lines {
                match line.as_bytes().first() {
                    Some(b' ') => new_cursor += 1,
                    Some(b'+') => {
                        if new_cursor == new_line {
                            return true;
                        }
                        new_cursor += 1;
                    }
                    _ => {}
                }
            }
            false
        })
    }
}

/// The largest middle section we run the quadratic LCS on (lines × lines).
/// Past it the whole middle counts as rewritten, which only costs precision.
const MAX_LCS_CELLS: usize = 4_000_000;

/// Hunks (without context lines) turning `old` into `new`.
fn diff_hunks(old: &str, new: &str) -> Vec<Hunk> {
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let prefix = old_lines
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = old_lines[prefix..]
        .iter()
        .rev()
        .zip(new_lines[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let old_middle = &old_lines[prefix..old_lines.len() - suffix];
    let new_middle = &new_lines[prefix..new_lines.len() - suffix];
    // An edit script over the middle: (old index, new index) pairs kept.
    let kept = if old_middle.len().saturating_mul(new_middle.len()) <= MAX_LCS_CELLS {
        lcs_pairs(old_middle, new_middle)
    } else {
        Vec::new()
    };

    let mut hunks = Vec::new();
    let (mut old_index, mut new_index) = (0usize, 0usize);
    let mut push_hunk = |old_from: usize, old_to: usize, new_from: usize, new_to: usize| {
        if old_from == old_to && new_from == new_to {
            return;
        }
        let mut lines: Vec<String> = old_middle[old_from..old_to]
            .iter()
            .map(|l| format!("-{l}"))
            .collect();
        lines.extend(new_middle[new_from..new_to].iter().map(|l| format!("+{l}")));
        let old_count = (old_to - old_from) as u32;
        let new_count = (new_to - new_from) as u32;
        // Unified-diff numbering: a pure insertion names the line before it.
        let old_start = (prefix + old_from) as u32 + u32::from(old_count > 0);
        let new_start = (prefix + new_from) as u32 + u32::from(new_count > 0);
        hunks.push(Hunk {
            old_start,
            old_lines: old_count,
            new_start,
            new_lines: new_count,
            lines,
        });
    };
    for (old_kept, new_kept) in kept {
        push_hunk(old_index, old_kept, new_index, new_kept);
        old_index = old_kept + 1;
        new_index = new_kept + 1;
    }
    push_hunk(old_index, old_middle.len(), new_index, new_middle.len());
    hunks
}

/// The index pairs of a longest common subsequence of lines.
fn lcs_pairs(old: &[&str], new: &[&str]) -> Vec<(usize, usize)> {
    let width = new.len() + 1;
    let mut table = vec![0u32; (old.len() + 1) * width];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            table[i * width + j] = if old[i] == new[j] {
                table[(i + 1) * width + j + 1] + 1
            } else {
                table[(i + 1) * width + j].max(table[i * width + j + 1])
            };
        }
    }
    let mut pairs = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        if old[i] == new[j] {
            pairs.push((i, j));
            i += 1;
            j += 1;
        } else if table[(i + 1) * width + j] >= table[i * width + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn patch_with_insertion_shifts_later_lines() {
        // Two lines inserted after line 2, line 5 rewritten.
        let patch = json!([
            {"oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 5,
             "lines": [" line 1", " line 2", "+new a", "+new b", " line 3"]},
            {"oldStart": 5, "oldLines": 1, "newStart": 7, "newLines": 1,
             "lines": ["-line 5", "+line five"]}
        ]);
        let map = LineMap::from_patch(&patch).unwrap();
        assert_eq!(map.map(1), Some(1));
        assert_eq!(map.map(2), Some(2));
        assert_eq!(map.map(3), Some(5));
        assert_eq!(map.map(4), Some(6));
        assert_eq!(map.map(5), None);
        assert_eq!(map.map(6), Some(8));
        assert!(map.is_new_text(3));
        assert!(map.is_new_text(7));
        assert!(!map.is_new_text(5));
    }

    #[test]
    fn inconsistent_patch_is_refused() {
        let patch = json!([{"oldStart": 1, "oldLines": 5, "newStart": 1, "newLines": 1, "lines": ["-a", "+b"]}]);
        assert!(LineMap::from_patch(&patch).is_none());
        assert!(LineMap::from_patch(&json!([])).is_none());
        assert!(LineMap::from_patch(&json!("x")).is_none());
    }

    #[test]
    fn text_diff_agrees_with_the_patch() {
        let old = numbered(8);
        let new = old
            .replace("line 2\n", "line 2\nnew a\nnew b\n")
            .replace("line 5\n", "line five\n")
            .replace("line 7\n", "");
        let map = LineMap::from_texts(&old, &new);
        assert_eq!(map.map(1), Some(1));
        assert_eq!(map.map(3), Some(5));
        assert_eq!(map.map(5), None);
        assert_eq!(map.map(6), Some(8));
        assert_eq!(map.map(7), None);
        assert_eq!(map.map(8), Some(9));
        assert!(map.is_new_text(4));
        assert!(map.is_new_text(7));
    }

    #[test]
    fn text_diff_of_insertions_at_the_ends() {
        let old = numbered(3);
        let new = format!("header\n{old}footer\n");
        let map = LineMap::from_texts(&old, &new);
        assert_eq!(map.map(1), Some(2));
        assert_eq!(map.map(3), Some(4));
        assert!(map.is_new_text(1));
        assert!(map.is_new_text(5));
        assert!(!map.is_new_text(2));
    }
}

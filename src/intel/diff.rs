//! Unified diffs (`--- a/x`, `+++ b/x`, `@@` hunks with three lines of
//! context) for previews and `fix` reports.

/// Lines in the changed middle above which the diff stops looking for
/// common lines and shows the middle as removed then added (the quadratic
/// table would be too big); previews stay correct, only longer.
const MAX_MIDDLE_LINES: usize = 3000;
const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same,
    Removed,
    Added,
}

/// The unified diff from `before` to `after` for `path`; empty when equal.
pub fn unified(path: &str, before: &str, after: &str) -> String {
    if before == after {
        return String::new();
    }
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    let script = edit_script(&old, &new);
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    // Positions (old index, new index) of each script entry.
    let mut positions = Vec::with_capacity(script.len());
    let (mut i, mut j) = (0usize, 0usize);
    for op in &script {
        positions.push((i, j));
        match op {
            Op::Same => {
                i += 1;
                j += 1;
            }
            Op::Removed => i += 1,
            Op::Added => j += 1,
        }
    }
    let changed: Vec<usize> = (0..script.len())
        .filter(|&k| script[k] != Op::Same)
        .collect();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(CONTEXT);
        let mut end = changed[k];
        while k < changed.len() && changed[k] <= end + 2 * CONTEXT {
            end = changed[k];
            k += 1;
        }
        let end = (end + CONTEXT + 1).min(script.len());
        let (old_start, new_start) = positions[start];
        let old_len = script[start..end]
            .iter()
            .filter(|op| **op != Op::Added)
            .count();
        let new_len = script[start..end]
            .iter()
            .filter(|op| **op != Op::Removed)
            .count();
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(old_start, old_len),
            range(new_start, new_len)
        ));
        for index in start..end {
            let (oi, nj) = positions[index];
            let (mark, line) = match script[index] {
                Op::Same => (' ', old[oi]),
                Op::Removed => ('-', old[oi]),
                Op::Added => ('+', new[nj]),
            };
            out.push(mark);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// The shortest edit script by longest common subsequence, after the
/// common prefix and suffix are taken off.
fn edit_script(old: &[&str], new: &[&str]) -> Vec<Op> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let old_mid = &old[prefix..old.len() - suffix];
    let new_mid = &new[prefix..new.len() - suffix];
    let mut script = vec![Op::Same; prefix];
    if old_mid.len() > MAX_MIDDLE_LINES || new_mid.len() > MAX_MIDDLE_LINES {
        script.extend(std::iter::repeat_n(Op::Removed, old_mid.len()));
        script.extend(std::iter::repeat_n(Op::Added, new_mid.len()));
    } else {
        let (n, m) = (old_mid.len(), new_mid.len());
        // lcs[i][j]: the common length of old_mid[i..] and new_mid[j..].
        let mut lcs = vec![0u32; (n + 1) * (m + 1)];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * (m + 1) + j] = if old_mid[i] == new_mid[j] {
                    lcs[(i + 1) * (m + 1) + j + 1] + 1
                } else {
                    lcs[(i + 1) * (m + 1) + j].max(lcs[i * (m + 1) + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && old_mid[i] == new_mid[j] {
                script.push(Op::Same);
                i += 1;
                j += 1;
            } else if i < n && (j == m || lcs[(i + 1) * (m + 1) + j] >= lcs[i * (m + 1) + j + 1]) {
                // Removed before added, as diff(1) shows a changed line.
                script.push(Op::Removed);
                i += 1;
            } else {
                script.push(Op::Added);
                j += 1;
            }
        }
    }
    script.extend(std::iter::repeat_n(Op::Same, suffix));
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_changed_line_with_context() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "a\nb\nc\nd\nE\nf\ng\nh\n";
        assert_eq!(
            unified("x.py", before, after),
            "--- a/x.py\n+++ b/x.py\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn equal_texts_have_no_diff_and_missing_newline_is_marked() {
        assert_eq!(unified("x", "a\n", "a\n"), "");
        assert_eq!(
            unified("x", "a", "b"),
            "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn distant_changes_make_two_hunks() {
        let before: String = (0..20).map(|i| format!("{i}\n")).collect();
        let after = before
            .replace("2\n", "two\n")
            .replace("17\n", "seventeen\n");
        let diff = unified("f", &before, &after);
        assert_eq!(diff.matches("@@ -").count(), 2, "{diff}");
    }
}

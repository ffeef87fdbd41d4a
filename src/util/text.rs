//! Small text helpers shared by the prompts and reports.

/// FNV-1a, 64 bit: a stable hash for fingerprints stored on disk (std's
/// hasher may change between Rust releases).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The last `n` lines of `text`, each cut to a readable width, trailing blank
/// lines dropped.
pub fn tail_lines_of(text: &str, n: usize) -> String {
    const MAX_LINE_CHARS: usize = 400;
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let skip = lines.len().saturating_sub(n);
    lines[skip..]
        .iter()
        .map(|line| {
            if line.chars().count() > MAX_LINE_CHARS {
                let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
                format!("{cut}…")
            } else {
                (*line).to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Indents every line of `text` by `prefix`.
pub fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|line| format!("{prefix}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

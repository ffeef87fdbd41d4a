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

/// `text` with control characters written as escapes (`\n`, `\r`, `\t`,
/// `\u{1b}`), and the Unicode line and paragraph separators too: a file
/// name that reaches text output (which Claude reads) must stay on its
/// line and must not forge another (a name holding `\napp.py:1:1 error …`).
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    escape_unless(text, |_| false)
}

/// [`escape_controls`] for prose that may span lines (a server's message,
/// a rule's fix, a loop's goal): newlines and tabs are its layout and stay;
/// every other control character (ESC, BEL, CR, NUL, backspace) and every
/// bidirectional override is escaped, so the text can neither drive a
/// terminal nor make what is shown read differently from what it is.
pub fn escape_controls_in_prose(text: &str) -> std::borrow::Cow<'_, str> {
    escape_unless(text, |c| c == '\n' || c == '\t')
}

/// Bidirectional embedding, override and isolate marks (and the invisible
/// direction marks): they reorder what a reader sees.
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// Characters that draw nothing but are read (zero-width spaces and
/// joiners, the word joiner and invisible operators, the byte order mark,
/// soft hyphen, fillers, interlinear annotation marks, Unicode tags, which
/// spell text only a model sees): a reader cannot see what they carry.
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200d}'
            | '\u{2060}'..='\u{2064}'
            | '\u{206a}'..='\u{206f}'
            | '\u{3164}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

fn escape_unless(text: &str, kept: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        !kept(c)
            && (c.is_control()
                || c == '\u{2028}'
                || c == '\u{2029}'
                || is_bidi_control(c)
                || is_invisible_format(c))
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !unsafe_char(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert!(matches!(
            escape_controls("app/models.py"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(escape_controls("größe 名前.py"), "größe 名前.py");
        assert_eq!(
            escape_controls("x.py\napp.py:1:1 error"),
            "x.py\\napp.py:1:1 error"
        );
        assert_eq!(
            escape_controls("a\r\t\u{1b}[31m\u{7f}\u{85}\u{2028}"),
            "a\\r\\t\\u{1b}[31m\\u{7f}\\u{85}\\u{2028}"
        );
    }

    // See: re-attack finding RA-3: zero-width and tag characters in a
    // check's output reached the Stop's reason as they were.
    #[test]
    fn invisible_format_characters_are_escaped() {
        let hidden = "ok\u{200b}\u{200d}\u{2060}\u{feff}\u{ad}\u{e0041}\u{e0069}\u{fff9}\u{3164}";
        let shown = escape_controls_in_prose(hidden);
        assert_eq!(
            shown,
            "ok\\u{200b}\\u{200d}\\u{2060}\\u{feff}\\u{ad}\\u{e0041}\\u{e0069}\\u{fff9}\\u{3164}"
        );
        assert_eq!(escape_controls_in_prose("größe 名前 é ✓"), "größe 名前 é ✓");
    }

    #[test]
    fn prose_keeps_its_layout_but_no_terminal_control_or_bidi_override() {
        assert_eq!(
            escape_controls_in_prose("line one\n\tline two"),
            "line one\n\tline two"
        );
        assert_eq!(
            escape_controls_in_prose("A\u{1b}]0;x\u{7}\r\u{0}\u{8}B\u{202e}C"),
            "A\\u{1b}]0;x\\u{7}\\r\\u{0}\\u{8}B\\u{202e}C"
        );
        assert_eq!(escape_controls("a\u{202e}b"), "a\\u{202e}b");
    }
}

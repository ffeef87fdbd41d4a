//! Positions: what people type (1-based line and column, counted in
//! characters) and what servers speak (0-based line, UTF-16 code units).

use serde_json::{Value, json};

/// A place in a file, 1-based, columns in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    pub line: u32,
    pub column: u32,
}

/// `12:5` as a place; anything else (a symbol name) is `None`.
pub fn parse_place(text: &str) -> Option<Place> {
    let (line, column) = text.split_once(':')?;
    let line: u32 = line.parse().ok()?;
    let column: u32 = column.parse().ok()?;
    (line >= 1 && column >= 1).then_some(Place { line, column })
}

/// The lines of `text` as LSP counts them: a line ends at `\r\n`, `\n`
/// or a lone `\r` (ruff and pyright count a lone CR as a line end; split
/// at `\n` only, every position after one was a line late, and `fix`
/// wrote ruff's edits over the wrong lines — re-attack RD-10, RD-12).
/// Each line's byte range, without its line end; the last line is the
/// text after the last line end (empty when it ends with one).
fn line_ranges(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    let (mut start, mut at) = (0, 0);
    while at < bytes.len() {
        match bytes[at] {
            b'\n' => {
                ranges.push((start, at));
                at += 1;
                start = at;
            }
            b'\r' => {
                ranges.push((start, at));
                at += if bytes.get(at + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                start = at;
            }
            _ => at += 1,
        }
    }
    ranges.push((start, bytes.len()));
    ranges
}

/// Line `index` (0-based) of `text` without its line end, if there is one.
fn nth_line(text: &str, index: usize) -> Option<&str> {
    line_ranges(text)
        .get(index)
        .map(|&(start, end)| &text[start..end])
}

/// The LSP position of `place` in `text`, or `None` past the line's end or
/// the file's last line.
pub fn to_lsp(text: &str, place: Place) -> Option<Value> {
    let line_text = nth_line(text, place.line as usize - 1)?;
    let characters = place.column as usize - 1;
    if characters > line_text.chars().count() {
        return None;
    }
    let utf16: usize = line_text
        .chars()
        .take(characters)
        .map(char::len_utf16)
        .sum();
    Some(json!({"line": place.line - 1, "character": utf16}))
}

/// The place of an LSP position (`{"line", "character"}`) in `text`.
pub fn from_lsp(text: &str, position: &Value) -> Option<Place> {
    let line = position.get("line")?.as_u64()? as usize;
    let character = position.get("character")?.as_u64()? as usize;
    let line_text = nth_line(text, line).unwrap_or("");
    let mut units = 0;
    let mut chars = 0u32;
    for ch in line_text.chars() {
        if units >= character {
            break;
        }
        units += ch.len_utf16();
        chars += 1;
    }
    Some(Place {
        line: line as u32 + 1,
        column: chars + 1,
    })
}

/// The byte offset of an LSP position in `text`; a position past a line's
/// end clamps to it, past the last line to the end of the text.
pub fn byte_offset(text: &str, position: &Value) -> Option<usize> {
    let line = position.get("line")?.as_u64()? as usize;
    let character = position.get("character")?.as_u64()? as usize;
    let Some(&(start, line_end)) = line_ranges(text).get(line) else {
        return Some(text.len());
    };
    let mut units = 0;
    for (index, ch) in text[start..line_end].char_indices() {
        if units >= character {
            return Some(start + index);
        }
        units += ch.len_utf16();
    }
    Some(line_end)
}

/// The text of line `line` (1-based), without its line ending.
pub fn line_text(text: &str, line: u32) -> &str {
    nth_line(text, (line as usize).saturating_sub(1)).unwrap_or("")
}

/// The first place where `name` stands as a whole identifier in `text`.
pub fn find_word(text: &str, name: &str) -> Option<Place> {
    if name.is_empty() {
        return None;
    }
    let is_ident = |ch: char| ch.is_alphanumeric() || ch == '_' || ch == '$';
    for (index, &(line_start, line_end)) in line_ranges(text).iter().enumerate() {
        let line = &text[line_start..line_end];
        let mut from = 0;
        while let Some(found) = line[from..].find(name) {
            let start = from + found;
            let end = start + name.len();
            let before_ok = !line[..start].chars().next_back().is_some_and(is_ident);
            let after_ok = !line[end..].chars().next().is_some_and(is_ident);
            if before_ok && after_ok {
                return Some(Place {
                    line: index as u32 + 1,
                    column: line[..start].chars().count() as u32 + 1,
                });
            }
            from = end;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_and_utf16_positions_round_trip() {
        let text = "x = 1\né😀 = helper()\n";
        let place = Place { line: 2, column: 6 };
        let lsp = to_lsp(text, place).unwrap();
        assert_eq!(lsp, json!({"line": 1, "character": 6}));
        assert_eq!(from_lsp(text, &lsp), Some(place));
        assert_eq!(&text[byte_offset(text, &lsp).unwrap()..][..6], "helper");
        assert_eq!(to_lsp(text, Place { line: 9, column: 1 }), None);
    }

    #[test]
    fn every_lsp_line_end_counts() {
        // `\r\n`, `\n` and a lone `\r` each end a line, as servers count.
        let text = "a\rbb\r\ncc\nd";
        let at = |line: u64, character: u64| json!({"line": line, "character": character});
        assert_eq!(byte_offset(text, &at(1, 1)), Some(3));
        assert_eq!(byte_offset(text, &at(2, 0)), Some(6));
        assert_eq!(byte_offset(text, &at(3, 1)), Some(10));
        assert_eq!(byte_offset(text, &at(9, 0)), Some(text.len()));
        assert_eq!(line_text(text, 2), "bb");
        assert_eq!(
            from_lsp(text, &at(2, 1)),
            Some(Place { line: 3, column: 2 })
        );
        assert_eq!(to_lsp(text, Place { line: 2, column: 3 }), Some(at(1, 2)));
        assert_eq!(find_word(text, "cc"), Some(Place { line: 3, column: 1 }));
    }

    #[test]
    fn names_and_places_are_told_apart() {
        assert_eq!(parse_place("3:7"), Some(Place { line: 3, column: 7 }));
        assert_eq!(parse_place("helper"), None);
        assert_eq!(parse_place("0:1"), None);
        assert_eq!(
            find_word("old_name_2 = 1\ndef old_name(): pass", "old_name"),
            Some(Place { line: 2, column: 5 })
        );
    }
}

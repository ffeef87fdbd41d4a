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

/// The LSP position of `place` in `text`, or `None` past the line's end or
/// the file's last line.
pub fn to_lsp(text: &str, place: Place) -> Option<Value> {
    let line_text = text.split('\n').nth(place.line as usize - 1)?;
    let line_text = line_text.strip_suffix('\r').unwrap_or(line_text);
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
    let line_text = text.split('\n').nth(line).unwrap_or("");
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
    let mut start = 0;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(newline) => start += newline + 1,
            None => return Some(text.len()),
        }
    }
    let line_end = text[start..].find('\n').map_or(text.len(), |n| start + n);
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
    let found = text.split('\n').nth(line as usize - 1).unwrap_or("");
    found.strip_suffix('\r').unwrap_or(found)
}

/// The first place where `name` stands as a whole identifier in `text`.
pub fn find_word(text: &str, name: &str) -> Option<Place> {
    if name.is_empty() {
        return None;
    }
    let is_ident = |ch: char| ch.is_alphanumeric() || ch == '_' || ch == '$';
    for (index, line) in text.split('\n').enumerate() {
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

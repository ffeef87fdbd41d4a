//! Text edits and workspace edits, applied to whole file texts in memory;
//! writing them is [`super::writer`]'s job.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use serde_json::Value;

use super::position::byte_offset;
use crate::lsp::uri;

/// One `TextEdit`: a range of `text` replaced by `new_text`.
#[derive(Debug, Clone, PartialEq)]
pub struct TextEdit {
    pub range: Value,
    pub new_text: String,
}

/// `text` with `edits` applied. The edits all refer to the same text, as
/// the protocol says; overlapping edits are refused.
pub fn apply(text: &str, edits: &[TextEdit]) -> anyhow::Result<String> {
    let mut spans = Vec::with_capacity(edits.len());
    for (order, edit) in edits.iter().enumerate() {
        let start = edit
            .range
            .get("start")
            .and_then(|p| byte_offset(text, p))
            .context("an edit without a valid start")?;
        let end = edit
            .range
            .get("end")
            .and_then(|p| byte_offset(text, p))
            .context("an edit without a valid end")?;
        if end < start {
            bail!("an edit whose end comes before its start");
        }
        spans.push((start, end, order, edit.new_text.as_str()));
    }
    // Same start: keep the server's order (inserts at one place).
    spans.sort_by_key(|&(start, end, order, _)| (start, end, order));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, _, new_text) in spans {
        if start < at {
            bail!("the server sent overlapping edits");
        }
        out.push_str(&text[at..start]);
        out.push_str(new_text);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

pub fn parse_text_edits(value: &Value) -> Vec<TextEdit> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    Some(TextEdit {
                        range: item.get("range")?.clone(),
                        new_text: item.get("newText")?.as_str()?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The text edits of a `WorkspaceEdit`, by file. File creations, renames
/// and deletions are refused: nothing here can roll them back.
pub fn workspace_edit(edit: &Value) -> anyhow::Result<BTreeMap<PathBuf, Vec<TextEdit>>> {
    let mut by_file: BTreeMap<PathBuf, Vec<TextEdit>> = BTreeMap::new();
    if let Some(changes) = edit.get("changes").and_then(Value::as_object) {
        for (document_uri, edits) in changes {
            let path = uri::to_path(document_uri)
                .with_context(|| format!("an edit for {document_uri}, not a file"))?;
            by_file
                .entry(path)
                .or_default()
                .extend(parse_text_edits(edits));
        }
    }
    if let Some(document_changes) = edit.get("documentChanges").and_then(Value::as_array) {
        for change in document_changes {
            if let Some(kind) = change.get("kind").and_then(Value::as_str) {
                bail!("the server wants to {kind} a file, which ralph-hooks does not do");
            }
            let document_uri = change
                .pointer("/textDocument/uri")
                .and_then(Value::as_str)
                .context("a document change without a document")?;
            let path = uri::to_path(document_uri)
                .with_context(|| format!("an edit for {document_uri}, not a file"))?;
            by_file.entry(path).or_default().extend(parse_text_edits(
                change.get("edits").unwrap_or(&Value::Null),
            ));
        }
    }
    by_file.retain(|_, edits| !edits.is_empty());
    Ok(by_file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edit(l1: u32, c1: u32, l2: u32, c2: u32, text: &str) -> TextEdit {
        TextEdit {
            range: json!({"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}),
            new_text: text.into(),
        }
    }

    #[test]
    fn edits_apply_against_the_original_text() {
        let text = "from utils import old\nold()\n";
        let edits = [edit(1, 0, 1, 3, "new"), edit(0, 18, 0, 21, "new")];
        assert_eq!(
            apply(text, &edits).unwrap(),
            "from utils import new\nnew()\n"
        );
        let overlapping = [edit(0, 0, 0, 5, "a"), edit(0, 3, 0, 6, "b")];
        assert!(apply(text, &overlapping).is_err());
    }

    #[test]
    fn workspace_edits_in_both_shapes() {
        let changes = json!({"changes": {"file:///p/a.py": [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "newText": "b"}
        ]}});
        let parsed = workspace_edit(&changes).unwrap();
        assert_eq!(parsed[&PathBuf::from("/p/a.py")].len(), 1);
        let document_changes = json!({"documentChanges": [
            {"textDocument": {"uri": "file:///p/b.ts", "version": 1}, "edits": [
                {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "newText": "c"}
            ]}
        ]});
        assert!(
            workspace_edit(&document_changes)
                .unwrap()
                .contains_key(&PathBuf::from("/p/b.ts"))
        );
        let create = json!({"documentChanges": [{"kind": "create", "uri": "file:///p/c.ts"}]});
        assert!(workspace_edit(&create).is_err());
    }
}

//! The symbol a command is about: `line:col`, or a name (its first
//! definition in the file, from the server's document symbols, else its
//! first whole-word occurrence), and the definitions a server reports.

use std::path::{Path, PathBuf};

use anyhow::bail;
use serde_json::{Value, json};

use super::position::{self, Place};
use super::session::{Server, Session};
use crate::lsp::{LspError, OpenFile, uri};

/// A resolved target: where it is and what it is called.
#[derive(Debug, Clone)]
pub struct Target {
    pub path: PathBuf,
    pub place: Place,
    pub lsp_position: Value,
    pub name: String,
}

/// One document symbol, flattened: its name, kind, where its name is, and
/// the chain of names it sits in (empty at the top level).
#[derive(Debug, Clone)]
pub struct Symbol {
    pub name: String,
    pub kind: u64,
    pub selection: Value,
    pub container: Vec<String>,
}

pub fn resolve(
    session: &mut Session<'_>,
    server: &Server,
    open: &[OpenFile],
    spec: &str,
) -> anyhow::Result<Target> {
    let file = &open[0];
    let display = session.display(&file.path);
    if let Some(place) = position::parse_place(spec) {
        let Some(lsp_position) = position::to_lsp(&file.text, place) else {
            bail!(
                "no position {}:{} in {display} (it has {} lines)",
                place.line,
                place.column,
                file.text.lines().count()
            );
        };
        let name = word_at(position::line_text(&file.text, place.line), place.column);
        if name.is_empty() {
            bail!(
                "no symbol at {display}:{}:{} (no identifier there)",
                place.line,
                place.column
            );
        }
        return Ok(Target {
            path: file.path.clone(),
            place,
            lsp_position,
            name,
        });
    }
    let symbols = document_symbols(session, server, open, &file.path).unwrap_or_default();
    let place = symbols
        .iter()
        .find(|symbol| symbol.name == spec)
        .and_then(|symbol| symbol.selection.get("start"))
        .and_then(|start| position::from_lsp(&file.text, start))
        .or_else(|| position::find_word(&file.text, spec));
    let Some(place) = place else {
        bail!("unknown symbol {spec:?}: it is not in {display}");
    };
    Ok(Target {
        path: file.path.clone(),
        lsp_position: position::to_lsp(&file.text, place)
            .unwrap_or(json!({"line": 0, "character": 0})),
        place,
        name: spec.to_string(),
    })
}

/// The identifier around column `column` (1-based) of `line`.
fn word_at(line: &str, column: u32) -> String {
    let chars: Vec<char> = line.chars().collect();
    let is_ident = |ch: char| ch.is_alphanumeric() || ch == '_' || ch == '$';
    let at = column as usize - 1;
    if at >= chars.len() || !is_ident(chars[at]) {
        return String::new();
    }
    let start = (0..=at)
        .rev()
        .take_while(|&i| is_ident(chars[i]))
        .last()
        .unwrap_or(at);
    let end = (at..chars.len())
        .take_while(|&i| is_ident(chars[i]))
        .last()
        .unwrap_or(at);
    chars[start..=end].iter().collect()
}

/// The file's document symbols, flattened in document order; `None` when
/// the server has none to give.
pub fn document_symbols(
    session: &mut Session<'_>,
    server: &Server,
    open: &[OpenFile],
    path: &Path,
) -> Option<Vec<Symbol>> {
    let key = (server.name.clone(), uri::comparable(path));
    let result = match session.symbols.get(&key) {
        Some(known) => known.clone(),
        None => {
            let asked = ask_document_symbols(session, server, open, path);
            session.symbols.insert(key, asked.clone());
            asked
        }
    }?;
    let items = result.as_array()?;
    let mut out = Vec::new();
    for item in items {
        flatten(item, &mut Vec::new(), &mut out);
    }
    Some(out)
}

/// The server's `textDocument/documentSymbol` answer, `None` when it has
/// none to give.
fn ask_document_symbols(
    session: &mut Session<'_>,
    server: &Server,
    open: &[OpenFile],
    path: &Path,
) -> Option<Value> {
    let params = json!({"textDocument": {"uri": uri::from_path(path)}});
    match session.request(server, open, "textDocument/documentSymbol", params) {
        Ok(result) => Some(result),
        Err(LspError::Rejected { .. }) => None,
        Err(_) => None,
    }
}

fn flatten(item: &Value, container: &mut Vec<String>, out: &mut Vec<Symbol>) {
    let Some(name) = item.get("name").and_then(Value::as_str) else {
        return;
    };
    let kind = item.get("kind").and_then(Value::as_u64).unwrap_or(0);
    // DocumentSymbol has a selectionRange; SymbolInformation a location
    // and a container name.
    let selection = item
        .get("selectionRange")
        .or_else(|| item.pointer("/location/range"))
        .cloned()
        .unwrap_or(Value::Null);
    let chain = match item.get("containerName").and_then(Value::as_str) {
        Some(parent) if !parent.is_empty() && container.is_empty() => vec![parent.to_string()],
        _ => container.clone(),
    };
    out.push(Symbol {
        name: name.to_string(),
        kind,
        selection,
        container: chain,
    });
    if let Some(children) = item.get("children").and_then(Value::as_array) {
        container.push(name.to_string());
        for child in children {
            flatten(child, container, out);
        }
        container.pop();
    }
}

/// Where the server says the symbol at `target` is defined: (file, range).
pub fn definitions(
    session: &mut Session<'_>,
    server: &Server,
    open: &[OpenFile],
    target: &Target,
) -> Vec<(PathBuf, Value)> {
    let params = json!({
        "textDocument": {"uri": uri::from_path(&target.path)},
        "position": target.lsp_position,
    });
    let Ok(result) = session.request(server, open, "textDocument/definition", params) else {
        return Vec::new();
    };
    let items = match result {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        single => vec![single],
    };
    items
        .iter()
        .filter_map(|item| {
            let (document_uri, range) = match item.get("targetUri") {
                Some(target_uri) => (
                    target_uri.as_str()?,
                    item.get("targetSelectionRange")
                        .or_else(|| item.get("targetRange"))?,
                ),
                None => (item.get("uri")?.as_str()?, item.get("range")?),
            };
            Some((uri::comparable(&uri::to_path(document_uri)?), range.clone()))
        })
        .collect()
}

/// Whether LSP position `at` lies within `range` (ends inclusive).
pub fn range_contains(range: &Value, at: &Value) -> bool {
    let key = |p: &Value| {
        (
            p.get("line").and_then(Value::as_u64).unwrap_or(0),
            p.get("character").and_then(Value::as_u64).unwrap_or(0),
        )
    };
    let (Some(start), Some(end)) = (range.get("start"), range.get("end")) else {
        return false;
    };
    key(start) <= key(at) && key(at) <= key(end)
}

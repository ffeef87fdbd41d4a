//! `ralph-hooks rename`: `textDocument/prepareRename` then
//! `textDocument/rename`, turned into whole-file changes for a preview or
//! the all-or-nothing write. A new name that already exists where the
//! symbol lives is a conflict, found from the document symbols of the
//! files the rename touches (not every server refuses one itself).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use super::edits;
use super::position;
use super::session::{Session, with_server};
use super::target::{self, Target, range_contains};
use super::writer::{FileChange, Stale};
use crate::lsp::{LspError, OpenFile, uri};

/// How many times the rename is asked again with more files open before
/// the command gives up on a server whose answer keeps growing.
const MAX_ROUNDS: usize = 3;

/// What a rename would do.
#[derive(Debug, Clone)]
pub struct Plan {
    pub symbol: String,
    pub new_name: String,
    pub changes: Vec<FileChange>,
    /// Text edits over all files.
    pub edits: usize,
}

pub fn plan(
    session: &mut Session<'_>,
    file: &Path,
    spec: &str,
    new_name: &str,
) -> anyhow::Result<Plan> {
    super::names::check(file, new_name).map_err(anyhow::Error::msg)?;
    with_server(
        session,
        file,
        "renameProvider",
        "rename",
        |session, server, open| {
            let target = target::resolve(session, server, open, spec)?;
            let where_ = format!(
                "{}:{}:{}",
                session.display(file),
                target.place.line,
                target.place.column
            );
            let document = json!({"uri": uri::from_path(&target.path)});
            let prepare = session
                .capabilities(server)
                .and_then(|caps| caps.pointer("/renameProvider/prepareProvider"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if prepare {
                let params = json!({"textDocument": document, "position": target.lsp_position});
                let answer = session.request(server, open, "textDocument/prepareRename", params)?;
                if answer.is_null() {
                    bail!("{:?} at {where_} cannot be renamed", target.name);
                }
            }
            let params = json!({
                "textDocument": document,
                "position": target.lsp_position,
                "newName": new_name,
            });
            let edit = match session.request(server, open, "textDocument/rename", params.clone()) {
                Ok(edit) => edit,
                Err(refused @ LspError::Rejected { .. }) => {
                    // A server that refuses a clashing name itself (gopls)
                    // gets the same answer as one that does not: where.
                    if let Some(conflict) =
                        find_conflict(session, server, open, &target, new_name, &[])
                    {
                        bail!("conflict: {conflict}; nothing renamed");
                    }
                    return Err(refused.into());
                }
                Err(error) => return Err(error.into()),
            };
            if edit.is_null() {
                bail!(
                    "{} has no rename for {:?} at {where_}",
                    server.name,
                    target.name
                );
            }
            let answered = answer_for_sent_texts(session, server, open, &params, edit)?;
            if answered.is_empty() {
                bail!(
                    "{} found nothing to rename for {:?} at {where_}",
                    server.name,
                    target.name
                );
            }
            let mut changes = Vec::new();
            let mut keys = Vec::new();
            let mut count = 0;
            for (path, before, file_edits) in answered {
                if let Some(edit) = file_edits
                    .iter()
                    .find(|e| !lands_on_name(&before, e, &target.name))
                {
                    let at = edit
                        .range
                        .get("start")
                        .and_then(|start| position::from_lsp(&before, start))
                        .map_or_else(String::new, |p| format!(" at {}:{}", p.line, p.column));
                    return Err(Stale {
                        paths: vec![path.clone()],
                        why: format!(
                            "is not the text {} computed the rename from: its edit{at} does not fall on {:?}",
                            server.name, target.name
                        ),
                    }
                    .into());
                }
                let after = edits::apply(&before, &file_edits)
                    .with_context(|| format!("the rename edits for {}", path.display()))?;
                count += file_edits.len();
                keys.push(uri::comparable(&path));
                changes.push(FileChange {
                    path,
                    before,
                    after,
                });
            }
            let touched: Vec<(PathBuf, &str)> = keys
                .into_iter()
                .zip(changes.iter().map(|c| c.before.as_str()))
                .collect();
            if let Some(conflict) =
                find_conflict(session, server, open, &target, new_name, &touched)
            {
                bail!("conflict: {conflict}; nothing renamed");
            }
            Ok(Plan {
                symbol: target.name.clone(),
                new_name: new_name.to_string(),
                changes,
                edits: count,
            })
        },
    )
}

/// The rename's edits by file, each with the text the server was sent for
/// that file: positions are only as good as the text they were computed
/// from. A server answers for the files it was not given from its own
/// view of them, which may be older than the disk (pyright keeps what it
/// read until told otherwise, so lines inserted by a shell command put its
/// positions on the wrong text). So every file an answer touches is read
/// now and sent, and the server asked again, until an answer touches only
/// files it was given (at most [`MAX_ROUNDS`] more requests). A file in an
/// answer that no longer exists is left out, with a note.
fn answer_for_sent_texts(
    session: &mut Session<'_>,
    server: &super::session::Server,
    open: &[OpenFile],
    params: &Value,
    mut edit: Value,
) -> anyhow::Result<Vec<(PathBuf, String, Vec<edits::TextEdit>)>> {
    let mut given: Vec<OpenFile> = open.to_vec();
    // Canonical paths are computed once per file: a rename touching
    // hundreds of files would otherwise resolve each path hundreds of times
    // (a `readlink` per component each time).
    let mut sent: HashMap<PathBuf, usize> = given
        .iter()
        .enumerate()
        .map(|(index, f)| (uri::comparable(&f.path), index))
        .collect();
    for round in 0..=MAX_ROUNDS {
        let mut answered = Vec::new();
        let mut unsent = Vec::new();
        for (path, file_edits) in edits::workspace_edit(&edit)? {
            let key = uri::comparable(&path);
            match sent.get(&key) {
                Some(&index) => answered.push((path, given[index].text.clone(), file_edits)),
                None => unsent.push((key, path)),
            }
        }
        let mut added = false;
        for (key, path) in unsent {
            if std::fs::symlink_metadata(&path).is_err() {
                let display = session.display(&path);
                session.note(format!(
                    "{} answered with edits for {display}, which no longer exists; left out",
                    server.name
                ));
                continue;
            }
            let text = super::session::read_text(&path)?;
            sent.insert(key, given.len());
            given.push(OpenFile {
                language_id: session.language_id(server, &path),
                path,
                text,
            });
            added = true;
        }
        if !added {
            return Ok(answered);
        }
        if round == MAX_ROUNDS {
            break;
        }
        edit = session.request(server, &given, "textDocument/rename", params.clone())?;
        if edit.is_null() {
            bail!(
                "{} has no rename any more once given the files it touches",
                server.name
            );
        }
    }
    bail!(
        "{} kept naming files it was not given after {MAX_ROUNDS} more requests; nothing renamed",
        server.name
    )
}

/// Whether `edit` replaces (or, inserting, touches) a whole-word occurrence
/// of `name` in `text`: every edit of a rename does, so one that does not
/// was computed from another text. Wider (`#name`, `'name'`), narrower (a
/// server that sends the difference `old` → `new` inside `oldName`) and
/// adjacent (`name: ` inserted before a shorthand field) edits all touch
/// the name.
fn lands_on_name(text: &str, edit: &edits::TextEdit, name: &str) -> bool {
    let offset = |key| {
        edit.range
            .get(key)
            .and_then(|p| position::byte_offset(text, p))
    };
    let (Some(start), Some(end)) = (offset("start"), offset("end")) else {
        return false;
    };
    if name.is_empty() || end < start {
        return false;
    }
    let is_ident = |ch: char| ch.is_alphanumeric() || ch == '_' || ch == '$';
    let mut low = start.saturating_sub(name.len());
    while !text.is_char_boundary(low) {
        low -= 1;
    }
    let mut high = (end + name.len()).min(text.len());
    while !text.is_char_boundary(high) {
        high += 1;
    }
    text[low..high].match_indices(name).any(|(at, _)| {
        let (from, to) = (low + at, low + at + name.len());
        let whole = !text[..from].chars().next_back().is_some_and(is_ident)
            && !text[to..].chars().next().is_some_and(is_ident);
        whole && start <= to && from <= end
    })
}

/// Where `new_name` already exists in the scope the rename writes it to:
/// beside the symbol's definition (same container), or at the top level of
/// another file the rename touches (where an import would now clash).
fn find_conflict(
    session: &mut Session<'_>,
    server: &super::session::Server,
    open: &[OpenFile],
    target: &Target,
    new_name: &str,
    touched: &[(PathBuf, &str)],
) -> Option<String> {
    let (definition_path, definition_range) = target::definitions(session, server, open, target)
        .into_iter()
        .next()
        .unwrap_or_else(|| {
            (
                uri::comparable(&target.path),
                json!({"start": target.lsp_position, "end": target.lsp_position}),
            )
        });
    let definition_start = definition_range
        .get("start")
        .cloned()
        .unwrap_or(Value::Null);
    let before: HashMap<&PathBuf, &str> = touched.iter().map(|(key, text)| (key, *text)).collect();
    let mut files = vec![definition_path.clone()];
    files.extend(
        touched
            .iter()
            .map(|(key, _)| key.clone())
            .filter(|p| *p != definition_path),
    );
    for path in files {
        let text = before
            .get(&path)
            .map(|text| text.to_string())
            .or_else(|| super::session::read_text(&path).ok())
            .unwrap_or_default();
        // A file where the new name appears nowhere cannot clash: no
        // symbol request for it (a rename touching 200 files would
        // otherwise ask 200 times).
        if path != definition_path && position::find_word(&text, new_name).is_none() {
            continue;
        }
        let mut needed = open.to_vec();
        if !needed.iter().any(|f| uri::comparable(&f.path) == path) {
            needed.push(OpenFile {
                path: path.clone(),
                text: text.clone(),
                language_id: server.language_id.clone(),
            });
        }
        let display = session.display(&path);
        let Some(symbols) = target::document_symbols(session, server, &needed, &path) else {
            // No symbols to go by: any whole-word use of the name counts.
            if let Some(place) = position::find_word(&text, new_name) {
                return Some(format!(
                    "{new_name:?} already appears in {display}:{}:{}",
                    place.line, place.column
                ));
            }
            continue;
        };
        let scope: Vec<String> = if path == definition_path {
            symbols
                .iter()
                .find(|s| {
                    s.selection
                        .get("start")
                        .is_some_and(|_| range_contains(&s.selection, &definition_start))
                })
                .map(|s| s.container.clone())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        if let Some(clash) = symbols
            .iter()
            .find(|s| s.name == new_name && s.container == scope)
        {
            let place = clash
                .selection
                .get("start")
                .and_then(|start| position::from_lsp(&text, start));
            let at = place.map_or_else(String::new, |p| format!(":{}:{}", p.line, p.column));
            return Some(format!(
                "{new_name:?} already exists in {display}{at} ({})",
                kind_word(clash.kind)
            ));
        }
    }
    None
}

fn kind_word(kind: u64) -> &'static str {
    match kind {
        5 => "class",
        6 => "method",
        12 => "function",
        13 => "variable",
        14 => "constant",
        7 | 8 => "field",
        11 => "interface",
        10 => "enum",
        23 => "struct",
        26 => "type parameter",
        _ => "symbol",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(line: u32, from: u32, to: u32, new_text: &str) -> edits::TextEdit {
        edits::TextEdit {
            range: json!({"start": {"line": line, "character": from}, "end": {"line": line, "character": to}}),
            new_text: new_text.into(),
        }
    }

    #[test]
    fn an_edit_must_land_on_the_old_name() {
        let text = "# a comment line\nfrom utils import old_name\nold_name()\nobj.#old_name = 1\n";
        // Exactly the name, wider (`#old_name`), inside it (a server that
        // sends the difference), an insertion touching it.
        assert!(lands_on_name(text, &edit(1, 18, 26, "new"), "old_name"));
        assert!(lands_on_name(text, &edit(3, 4, 13, "#new"), "old_name"));
        assert!(lands_on_name(text, &edit(2, 0, 3, "new"), "old_name"));
        assert!(lands_on_name(text, &edit(2, 0, 0, "x: "), "old_name"));
        // The corruption: the old offsets, two lines up.
        assert!(!lands_on_name(text, &edit(0, 12, 20, "new"), "old_name"));
        // Part of a longer name is not the name.
        let longer = "old_name_2 = 1\n";
        assert!(!lands_on_name(longer, &edit(0, 0, 8, "new"), "old_name"));
        // Past the end of the text (a file that got shorter).
        assert!(!lands_on_name("x\n", &edit(7, 0, 8, "new"), "old_name"));
    }
}

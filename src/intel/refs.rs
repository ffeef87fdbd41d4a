//! `ralph-hooks refs`: every reference to a symbol across the project, from
//! the file's language server (`textDocument/references` with the
//! declaration included), each marked as a definition or a use.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::bail;
use serde::Serialize;
use serde_json::{Value, json};

use super::position;
use super::session::{Session, with_server};
use super::target::{self, range_contains};
use crate::lsp::uri;

#[derive(Debug, Clone, Serialize)]
pub struct Reference {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub is_definition: bool,
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Refs {
    pub symbol: String,
    pub references: Vec<Reference>,
    pub count: usize,
}

impl Refs {
    /// `3 references: 1 definition, 2 uses in 2 files`.
    pub fn summary(&self) -> String {
        let definitions = self.references.iter().filter(|r| r.is_definition).count();
        let uses = self.count - definitions;
        let files: BTreeSet<&str> = self.references.iter().map(|r| r.path.as_str()).collect();
        format!(
            "{} {}: {definitions} {}, {uses} {} in {} {}",
            self.count,
            plural(self.count, "reference", "references"),
            plural(definitions, "definition", "definitions"),
            plural(uses, "use", "uses"),
            files.len(),
            plural(files.len(), "file", "files"),
        )
    }
}

pub fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

pub fn find(session: &mut Session<'_>, file: &Path, spec: &str) -> anyhow::Result<Refs> {
    with_server(
        session,
        file,
        "referencesProvider",
        "references",
        |session, server, open| {
            let target = target::resolve(session, server, open, spec)?;
            let params = json!({
                "textDocument": {"uri": uri::from_path(&target.path)},
                "position": target.lsp_position,
                "context": {"includeDeclaration": true},
            });
            let result = session.request(server, open, "textDocument/references", params)?;
            let locations = result.as_array().cloned().unwrap_or_default();
            if locations.is_empty() {
                bail!(
                    "no references to {:?} at {}:{}:{} (not a symbol the server knows)",
                    target.name,
                    session.display(file),
                    target.place.line,
                    target.place.column
                );
            }
            let definitions = target::definitions(session, server, open, &target);
            // Per file (not per reference): its canonical path, shown path
            // and text.
            let mut files: HashMap<&str, (PathBuf, String, String)> = HashMap::new();
            let mut references = Vec::new();
            for location in &locations {
                let Some(location_uri) = location.get("uri").and_then(Value::as_str) else {
                    continue;
                };
                let Some(start) = location.pointer("/range/start") else {
                    continue;
                };
                if !files.contains_key(location_uri) {
                    let Some(path) = uri::to_path(location_uri) else {
                        continue;
                    };
                    let text = super::session::read_text_lossy(&path);
                    let shown = session.display(&path);
                    files.insert(location_uri, (uri::comparable(&path), shown, text));
                }
                let (key, shown, text) = &files[location_uri];
                let Some(place) = position::from_lsp(text, start) else {
                    continue;
                };
                let is_definition = definitions
                    .iter()
                    .any(|(def_path, range)| def_path == key && range_contains(range, start));
                references.push(Reference {
                    path: shown.clone(),
                    line: place.line,
                    column: place.column,
                    is_definition,
                    text: position::line_text(text, place.line).trim().to_string(),
                });
            }
            references
                .sort_by(|a, b| (&a.path, a.line, a.column).cmp(&(&b.path, b.line, b.column)));
            references.dedup_by(|a, b| (&a.path, a.line, a.column) == (&b.path, b.line, b.column));
            Ok(Refs {
                symbol: target.name,
                count: references.len(),
                references,
            })
        },
    )
}

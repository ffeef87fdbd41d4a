//! Explicit context for slash commands:
//! `{{VARS}}` in a prompt template come from the outputs of earlier phases,
//! and every path handed to an agent is absolute and inside the project.
//!
//! A template that still holds a placeholder after substitution is an error
//! naming each one: an agent must never receive `{{PROJECT_NAME}}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::hook::ctx::Ctx;
use crate::orchestrator::schema::normalize;

/// Template variables by name (`PROJECT_NAME`), each with the file it came from.
#[derive(Debug, Default, Clone)]
pub struct Variables {
    values: BTreeMap<String, (String, String)>,
}

impl Variables {
    /// Adds the `outputs` of one phase result; later files win.
    pub fn add_outputs(
        &mut self,
        ctx: &Ctx,
        source: &str,
        phase_result: &Value,
    ) -> anyhow::Result<()> {
        let outputs = phase_result
            .get("outputs")
            .and_then(Value::as_object)
            .with_context(|| {
                format!("{source} has no \"outputs\" object: is it a phase result?")
            })?;
        for (key, value) in outputs {
            let name = variable_name(key);
            let text = value_text(value);
            if let Some((previous_source, _)) = self.values.get(&name) {
                ctx.debug(format_args!(
                    "{{{{{name}}}}} from {source} overrides the one from {previous_source}"
                ));
            }
            self.values.insert(name, (source.to_string(), text));
        }
        // The phase result's own fields (seed 000 REQ-2.2), after the outputs
        // so an output cannot shadow them: `{{FILES_CREATED}}` is always the
        // checked absolute paths.
        if let Some(files) = phase_result.get("files_created").and_then(Value::as_array) {
            let mut paths = Vec::new();
            for file in files {
                let file = file
                    .as_str()
                    .with_context(|| format!("{source}: files_created holds {file}, not a path"))?;
                let path = resolve_path(ctx, file)
                    .with_context(|| format!("{source}: files_created {file:?}"))?;
                paths.push(path.display().to_string());
            }
            let text = if paths.is_empty() {
                "(none)".to_string()
            } else {
                paths.join(", ")
            };
            self.insert_builtin(ctx, source, "FILES_CREATED", text);
        }
        for (field, name) in [("next_phase", "NEXT_PHASE"), ("phase", "PHASE")] {
            if let Some(value) = phase_result.get(field).and_then(Value::as_str) {
                self.insert_builtin(ctx, source, name, value.to_string());
            }
        }
        Ok(())
    }

    fn insert_builtin(&mut self, ctx: &Ctx, source: &str, name: &str, text: String) {
        if let Some((previous_source, _)) = self.values.get(name)
            && previous_source == source
        {
            ctx.debug(format_args!(
                "{{{{{name}}}}} is the phase result's own field; the output of that name in {source} is ignored"
            ));
        }
        self.values
            .insert(name.to_string(), (source.to_string(), text));
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(|(_, text)| text.as_str())
    }
}

/// `project_name` → `PROJECT_NAME`; other separators become `_` too.
pub fn variable_name(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// Strings as they are, lists of strings joined by `, `, anything else as JSON.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// Substitutes every `{{NAME}}` it has a value for, in one pass (values are
/// not scanned again); fails listing each placeholder left.
pub fn render(ctx: &Ctx, template: &str, variables: &Variables) -> anyhow::Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut missing: Vec<String> = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let name = &after[..close];
        let placeholder = &rest[open..open + 2 + close + 2];
        match variables.get(name) {
            Some(value) if is_placeholder_name(name) => {
                ctx.debug(format_args!(
                    "Replacing template variable: {placeholder} → {value}"
                ));
                out.push_str(value);
            }
            _ => {
                if is_placeholder_name(name) && !missing.iter().any(|m| m == placeholder) {
                    missing.push(placeholder.to_string());
                }
                out.push_str(placeholder);
            }
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    if !missing.is_empty() {
        bail!(
            "unsubstituted template variables: {} (no phase output provides them; pass the phase result that does with --context)",
            missing.join(", ")
        );
    }
    Ok(out)
}

/// Seed 000's placeholder names: capitals, digits and `_`, starting with a
/// capital or `_`.
fn is_placeholder_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Seed 000 REQ-1.2: the absolute path of `relative` inside the project root.
/// A directory must exist; a file may be one yet to be created, but its
/// parent directory must exist. Paths outside the root (by `..` or through
/// a symlink) are refused.
pub fn resolve_path(ctx: &Ctx, relative: &str) -> anyhow::Result<PathBuf> {
    if relative.is_empty() {
        bail!("empty path: give a path relative to the project root");
    }
    let root = normalize(&ctx.project_root);
    let joined = Path::new(relative);
    let absolute = normalize(&if joined.is_absolute() {
        joined.to_path_buf()
    } else {
        root.join(joined)
    });
    ctx.debug(format_args!(
        "Validating path: {relative} → {}",
        absolute.display()
    ));
    if !absolute.starts_with(&root) {
        bail!(
            "path outside the project root: {} (the root is {})",
            absolute.display(),
            root.display()
        );
    }
    let parent = if absolute.is_dir() {
        absolute.clone()
    } else {
        let parent = absolute
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| root.clone());
        if !parent.is_dir() {
            bail!("parent directory not found: {}", parent.display());
        }
        parent
    };
    // A symlinked directory could lead out of the project; compare real paths.
    let real_root = root
        .canonicalize()
        .with_context(|| format!("cannot resolve the project root {}", root.display()))?;
    let real_parent = parent
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", parent.display()))?;
    if !real_parent.starts_with(&real_root) {
        bail!(
            "path outside the project root through a symlink: {} resolves to {}",
            absolute.display(),
            real_parent.display()
        );
    }
    Ok(absolute)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_seed() {
        assert_eq!(variable_name("project_name"), "PROJECT_NAME");
        assert_eq!(variable_name("tech-stack"), "TECH_STACK");
        assert!(is_placeholder_name("PROJECT_NAME"));
        assert!(is_placeholder_name("V2"));
        assert!(!is_placeholder_name("lower"));
        assert!(!is_placeholder_name(" NAME "));
        assert!(!is_placeholder_name(""));
    }

    #[test]
    fn values_become_text() {
        assert_eq!(value_text(&serde_json::json!("x")), "x");
        assert_eq!(
            value_text(&serde_json::json!(["python", "fastapi"])),
            "python, fastapi"
        );
        assert_eq!(value_text(&serde_json::json!(3)), "3");
        assert_eq!(value_text(&serde_json::json!({"a": 1})), "{\"a\":1}");
    }

    #[test]
    fn files_created_and_next_phase_are_variables_with_checked_absolute_paths() {
        let root =
            std::env::temp_dir().join(format!("ralph-hooks-unit-templates-{}", std::process::id()));
        std::fs::create_dir_all(root.join("docs")).unwrap();
        let ctx = Ctx::for_cli(Some(&root)).unwrap();
        let result = serde_json::json!({
            "phase": "0-project",
            "outputs": {"project_name": "MyProject"},
            "files_created": ["docs/product.md", root.join("docs/structure.md").display().to_string()],
            "next_phase": "1-plan"
        });
        let mut variables = Variables::default();
        variables.add_outputs(&ctx, "p.json", &result).unwrap();
        let text = render(
            &ctx,
            "{{PROJECT_NAME}} made {{FILES_CREATED}}; next {{NEXT_PHASE}}",
            &variables,
        )
        .unwrap();
        let root_text = normalize(&root).display().to_string();
        assert_eq!(
            text,
            format!(
                "MyProject made {root_text}/docs/product.md, {root_text}/docs/structure.md; next 1-plan"
            )
        );
        let outside = serde_json::json!({"outputs": {}, "files_created": ["../elsewhere.md"]});
        let error = Variables::default()
            .add_outputs(&ctx, "q.json", &outside)
            .unwrap_err();
        assert!(
            format!("{error:#}").contains("path outside the project root"),
            "{error:#}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}

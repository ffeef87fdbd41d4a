//! The schema check inside the hooks: a Write of an orchestrator file is
//! validated before it lands (PreToolUse, denied when broken); an Edit is
//! validated on disk after it landed (PostToolUse, blocked when broken).
//!
//! The guard runs before every tool call, so a path that is not one of ours
//! costs a few string comparisons: nothing is read or parsed unless
//! [`schema::recognize`] says the path is an orchestrator file.

use std::path::{Path, PathBuf};

use crate::hook::ctx::Ctx;
use crate::hook::protocol::{HookOutput, ToolInput};
use crate::orchestrator::schema::{self, Role, Violation};
use crate::util::fsread::{self, Links, limits};

/// At most this many violations are listed; the rest are counted.
const MAX_LISTED: usize = 30;

/// PreToolUse: deny a Write whose content breaks its file's schema.
pub fn check_write(ctx: &Ctx, tool: &ToolInput) -> Option<HookOutput> {
    if tool.tool_name != "Write" {
        return None;
    }
    let path = absolute(ctx, tool.input_str("file_path")?);
    let role = schema::recognize(&path, &ctx.state_root)?;
    let content = tool.input_str("content")?;
    let violations = schema::validate(&role, content);
    ctx.debug(format_args!(
        "schema: Write of {} ({}): {} violation(s)",
        path.display(),
        role.title(),
        violations.len()
    ));
    if violations.is_empty() {
        return None;
    }
    let lead = format!(
        "Write denied: the content breaks the schema of {}.",
        role.title()
    );
    Some(HookOutput::deny(explain(
        ctx,
        &path,
        &role,
        &violations,
        &lead,
    )))
}

/// PostToolUse: flag an Edit (or MultiEdit, or a Write no guard saw) that
/// left an orchestrator file out of schema.
pub fn check_edit(ctx: &Ctx, tool: &ToolInput) -> Option<HookOutput> {
    if !matches!(tool.tool_name.as_str(), "Edit" | "MultiEdit" | "Write") {
        return None;
    }
    let path = absolute(ctx, tool.input_str("file_path")?);
    let role = schema::recognize(&path, &ctx.state_root)?;
    let text = match fsread::read_text(&path, limits::DOCUMENT, Links::Follow) {
        Ok(Some(text)) => text,
        Ok(None) => return None,
        Err(error) => {
            ctx.debug(format_args!(
                "schema: cannot read {} after the {}: {error}",
                path.display(),
                tool.tool_name
            ));
            return None;
        }
    };
    let violations = schema::validate(&role, &text);
    ctx.debug(format_args!(
        "schema: {} of {} ({}): {} violation(s)",
        tool.tool_name,
        path.display(),
        role.title(),
        violations.len()
    ));
    if violations.is_empty() {
        return None;
    }
    let lead = format!(
        "This {} left the file out of the schema of {}.",
        tool.tool_name,
        role.title()
    );
    Some(HookOutput::block(explain(
        ctx,
        &path,
        &role,
        &violations,
        &lead,
    )))
}

fn absolute(ctx: &Ctx, file_path: &str) -> PathBuf {
    let path = Path::new(file_path);
    if path.is_absolute() {
        schema::normalize(path)
    } else {
        schema::normalize(&ctx.project_root.join(path))
    }
}

/// The errors, each as `file:line:col: message`, then what to do.
pub fn explain(
    ctx: &Ctx,
    path: &Path,
    role: &Role,
    violations: &[Violation],
    lead: &str,
) -> String {
    let display = ctx.display_path(path);
    let mut text = format!("{lead}\n");
    for violation in violations.iter().take(MAX_LISTED) {
        text.push_str(&schema::format_violation(&display, violation));
        text.push('\n');
    }
    if violations.len() > MAX_LISTED {
        text.push_str(&format!(
            "… and {} more (run `ralph-hooks validate {display}`)\n",
            violations.len() - MAX_LISTED
        ));
    }
    text.push_str(&format!(
        "Regenerate the file following the schema in {}: exactly these fields, no others.\n{}",
        role.schema_source(),
        role.outline()
    ));
    text.trim_end().to_string()
}

//! Schema checks inside the hooks (issue 5). Not built yet: everything passes.

use crate::ctx::Ctx;
use crate::protocol::{HookOutput, ToolInput};

/// PreToolUse: deny a Write whose content breaks its file's schema.
pub fn check_write(_ctx: &Ctx, _tool: &ToolInput) -> Option<HookOutput> {
    None
}

/// PostToolUse: flag an Edit that left a file out of schema.
pub fn check_edit(_ctx: &Ctx, _tool: &ToolInput) -> Option<HookOutput> {
    None
}

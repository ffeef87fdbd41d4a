//! PreToolUse guard rules (issue 4). Not built yet: nothing is denied.

use crate::ctx::Ctx;
use crate::protocol::{HookOutput, ToolInput};

pub fn check(_ctx: &Ctx, _tool: &ToolInput) -> Option<HookOutput> {
    None
}

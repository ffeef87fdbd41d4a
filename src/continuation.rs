//! Task-step and todo continuation at Stop when no loop runs (issue 4).
//! Not built yet: every stop is allowed.

use crate::ctx::Ctx;
use crate::protocol::{HookOutput, StopInput};

pub fn on_stop(_ctx: &Ctx, _stop: &StopInput) -> anyhow::Result<HookOutput> {
    Ok(HookOutput::silent())
}

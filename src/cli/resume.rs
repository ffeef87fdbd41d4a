//! `ralph-hooks resume|render|path`: not built yet in this version.

use std::process::ExitCode;

use super::Args;
use crate::ctx::Ctx;

pub fn run(_ctx: &Ctx, command: &str, _args: &mut Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`ralph-hooks {command}` is not available in this version yet")
}

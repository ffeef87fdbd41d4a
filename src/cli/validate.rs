//! `ralph-hooks validate`: not built yet in this version.

use std::process::ExitCode;

use super::Args;
use crate::ctx::Ctx;

pub fn run(_ctx: &Ctx, _args: &mut Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`ralph-hooks validate` is not available in this version yet")
}

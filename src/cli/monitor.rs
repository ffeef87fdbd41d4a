//! `ralph-hooks monitor [--port 3847] [--bind 127.0.0.1] [--project [NAME=]DIR]...
//! [--token TOKEN] [--open]`: the dashboard server of [`crate::monitor`].

use std::process::ExitCode;

use anyhow::Context as _;

use super::Args;
use crate::hook::ctx::Ctx;
use crate::monitor::{self, DEFAULT_PORT, Options};

pub fn run(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let port = args.number::<u16>("--port")?.unwrap_or(DEFAULT_PORT);
    let bind = match args.value("--bind")? {
        None => std::net::IpAddr::from([127, 0, 0, 1]),
        Some(text) => text.parse().with_context(|| {
            format!("--bind must be an IP address such as 127.0.0.1, not {text:?}")
        })?,
    };
    // `--project` before the command is the CLI's own; after `monitor` it
    // may repeat, one agent each.
    let projects = args.values("--project")?;
    let token = args.value("--token")?;
    let open = args.flag("--open");
    args.finish()?;
    monitor::run(
        ctx,
        Options {
            port,
            bind,
            projects,
            token,
            open,
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

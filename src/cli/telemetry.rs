//! `ralph-hooks telemetry`: the OpenTelemetry exporter in the foreground
//! (what the hooks start), its status, or stopping it.

use std::process::ExitCode;

use super::Args;
use crate::hook::ctx::Ctx;

pub fn run(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let sub = args.positional().unwrap_or_else(|| "status".into());
    let json = args.flag("--json");
    args.finish()?;
    match sub.as_str() {
        "run" => {
            crate::exporter::run(ctx)?;
            Ok(ExitCode::SUCCESS)
        }
        "status" => {
            if json {
                let status = crate::telemetry::status::read(ctx);
                let running = crate::telemetry::start::exporter_running(&ctx.state_root);
                println!(
                    "{}",
                    serde_json::json!({"running": running, "status": status})
                );
            } else {
                for line in crate::telemetry::status::lines(ctx) {
                    println!("{line}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        "stop" => {
            match crate::telemetry::status::stop(ctx)? {
                Some(pid) => println!("stopped exporter {pid}"),
                None => println!("no exporter running"),
            }
            Ok(ExitCode::SUCCESS)
        }
        other => anyhow::bail!("unknown telemetry command {other:?}: use run, status or stop"),
    }
}

//! `ralph-hooks telemetry`: the OpenTelemetry exporter in the foreground
//! (what the hooks start), its status, or stopping it.

use std::process::ExitCode;

pub const EXAMPLES: &str = "\
Examples:
  ralph-hooks telemetry            # the same as `telemetry status`
  ralph-hooks telemetry status --json
  ralph-hooks telemetry stop";

#[derive(Debug, clap::Args)]
pub struct TelemetryArgs {
    #[command(subcommand)]
    pub action: Option<TelemetryCommand>,
}

#[derive(Debug, clap::Subcommand)]
pub enum TelemetryCommand {
    /// Whether export is on, where it goes and how far it got (the default)
    Status {
        /// As JSON
        #[arg(long)]
        json: bool,
    },
    /// Run the exporter in the foreground (what the hooks start)
    Run,
    /// Stop the running exporter
    Stop,
}
use crate::hook::ctx::Ctx;

pub fn run(ctx: &Ctx, args: &TelemetryArgs) -> anyhow::Result<ExitCode> {
    let action = args
        .action
        .as_ref()
        .unwrap_or(&TelemetryCommand::Status { json: false });
    match action {
        TelemetryCommand::Run => {
            crate::exporter::run(ctx)?;
            Ok(ExitCode::SUCCESS)
        }
        TelemetryCommand::Status { json } => {
            if *json {
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
        TelemetryCommand::Stop => {
            match crate::telemetry::status::stop(ctx)? {
                Some(pid) => println!("stopped exporter {pid}"),
                None => println!("no exporter running"),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

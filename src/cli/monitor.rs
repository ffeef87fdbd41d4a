//! `ralph-hooks monitor [--port 3847] [--bind 127.0.0.1] [--project [NAME=]DIR]...
//! [--token TOKEN] [--open]`: the dashboard server of [`crate::monitor`].
//!
//! Before it starts, a `--project` given twice (as the same directory,
//! however spelt) is made one; when the port is taken, the message says
//! whether this project's monitor is the one holding it, where it is, and
//! which `--port` is free for another. The write token stays out of the
//! message, as in `status`: the agent may read the output, so it names the
//! file that holds the token instead.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use crate::hook::ctx::Ctx;
use crate::monitor::{self, DEFAULT_PORT, MonitorFile, Options};

pub const EXAMPLES: &str = "\
Examples:
  ralph-hooks monitor                                   # this project, http://127.0.0.1:3847/
  ralph-hooks monitor --project api=../api --project ../web --port 4000
  ralph-hooks monitor --bind 0.0.0.0 --token \"$TOKEN\"   # other machines (warns)";

#[derive(Debug, clap::Args)]
pub struct MonitorArgs {
    /// The port to listen on
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// The address to listen on; anything but loopback is reachable from other machines
    #[arg(long, value_name = "IP", default_value = "127.0.0.1")]
    pub bind: String,
    /// A project to watch, named NAME (default: the folder's name); repeatable
    #[arg(long = "project", id = "project", value_name = "[NAME=]DIR")]
    pub projects: Vec<String>,
    /// The token writes need (default: 128 random bits, printed in the URL)
    #[arg(long)]
    pub token: Option<String>,
    /// Open the dashboard in the browser
    #[arg(long)]
    pub open: bool,
}

pub fn run(ctx: &Ctx, args: MonitorArgs) -> anyhow::Result<ExitCode> {
    let bind: IpAddr = args.bind.parse().with_context(|| {
        format!(
            "--bind must be an IP address such as 127.0.0.1, not {:?}",
            args.bind
        )
    })?;
    let projects = distinct_projects(args.projects);
    let address = SocketAddr::new(bind, args.port);
    let result = monitor::run(
        ctx,
        Options {
            port: args.port,
            bind,
            projects: projects.clone(),
            token: args.token,
            open: args.open,
        },
    );
    match result {
        Err(error) if address_in_use(&error) => {
            let running = running_monitors(ctx, &projects);
            bail!(
                "{}",
                port_taken(address, &running, free_port_after(address))
            )
        }
        Err(error) => Err(error),
        Ok(()) => Ok(ExitCode::SUCCESS),
    }
}

/// `[NAME=]DIR` values with each directory once: the first spelling (and
/// name) wins; a second name for the same directory is said and dropped.
fn distinct_projects(projects: Vec<String>) -> Vec<String> {
    let mut seen: Vec<(PathBuf, String)> = Vec::new();
    let mut kept = Vec::new();
    for spec in projects {
        let dir = project_dir(&spec);
        let key = std::fs::canonicalize(dir).unwrap_or_else(|_| PathBuf::from(dir));
        match seen.iter().find(|(known, _)| *known == key) {
            Some((_, first)) => {
                if *first != spec {
                    eprintln!(
                        "ralph-hooks: --project {spec} is the same project as --project {first}: watched once"
                    );
                }
            }
            None => {
                seen.push((key, spec.clone()));
                kept.push(spec);
            }
        }
    }
    kept
}

/// The directory of a `[NAME=]DIR` value, read as `monitor::agents` reads it.
fn project_dir(spec: &str) -> &str {
    match spec.split_once('=') {
        Some((name, dir)) if !name.is_empty() && !name.contains('/') => dir,
        _ => spec,
    }
}

fn address_in_use(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::AddrInUse)
    })
}

/// A monitor already serving one of the projects asked for.
struct Running {
    project: String,
    file: MonitorFile,
    /// Where its token is (`monitor.json`).
    token_file: PathBuf,
}

/// The monitors already serving the projects asked for.
fn running_monitors(ctx: &Ctx, projects: &[String]) -> Vec<Running> {
    let Ok(agents) = monitor::agents(&ctx.project_root, projects) else {
        return Vec::new();
    };
    agents
        .iter()
        .filter_map(|agent| {
            let ctx = agent.ctx();
            let store = ctx.store();
            monitor::running(store).map(|file| Running {
                project: agent.project_root.display().to_string(),
                file,
                token_file: store.path(monitor::MONITOR_FILE),
            })
        })
        .collect()
}

/// The first port after the taken one that can be listened on now.
fn free_port_after(address: SocketAddr) -> Option<u16> {
    (1..=50u16)
        .filter_map(|step| address.port().checked_add(step))
        .find(|port| std::net::TcpListener::bind(SocketAddr::new(address.ip(), *port)).is_ok())
}

/// What to say when `address` is taken, given the monitors already
/// running for these projects.
fn port_taken(address: SocketAddr, running: &[Running], free: Option<u16>) -> String {
    let another = match free {
        Some(port) => format!("start another with --port {port}"),
        None => "start another with --port N (a free port)".to_string(),
    };
    let at = |running: &Running| {
        format!(
            "{} (pid {}; the token is in {})",
            running.file.url,
            running.file.pid,
            running.token_file.display()
        )
    };
    let same_port = running
        .iter()
        .find(|r| url_port(&r.file.url) == Some(address.port()));
    if let Some(ours) = same_port {
        return format!(
            "the monitor of {} is already running at {}: open that, or {another}",
            ours.project,
            at(ours)
        );
    }
    match running.first() {
        Some(other) => format!(
            "cannot listen on {address}: another program has the port (the monitor of {} runs at {}); {another}",
            other.project,
            at(other)
        ),
        None => format!("cannot listen on {address}: another program has the port; {another}"),
    }
}

/// `3847` from `http://127.0.0.1:3847/`.
fn url_port(url: &str) -> Option<u16> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host_port = rest.split('/').next()?;
    host_port.rsplit_once(':')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(url: &str) -> Running {
        Running {
            project: "/p/app".into(),
            file: MonitorFile {
                version: 1,
                url: url.into(),
                pid: 42,
                token: "t0k".into(),
            },
            token_file: "/p/app/.claude/orchestrator/monitor.json".into(),
        }
    }

    #[test]
    fn a_taken_port_says_who_has_it_and_what_to_do() {
        let address: SocketAddr = "127.0.0.1:3847".parse().unwrap();
        let ours = vec![running("http://127.0.0.1:3847/")];
        assert_eq!(
            port_taken(address, &ours, Some(3848)),
            "the monitor of /p/app is already running at http://127.0.0.1:3847/ (pid 42; the token is in /p/app/.claude/orchestrator/monitor.json): open that, or start another with --port 3848"
        );
        let elsewhere = vec![running("http://127.0.0.1:4000/")];
        assert_eq!(
            port_taken(address, &elsewhere, Some(3848)),
            "cannot listen on 127.0.0.1:3847: another program has the port (the monitor of /p/app runs at http://127.0.0.1:4000/ (pid 42; the token is in /p/app/.claude/orchestrator/monitor.json)); start another with --port 3848"
        );
        assert_eq!(
            port_taken(address, &[], None),
            "cannot listen on 127.0.0.1:3847: another program has the port; start another with --port N (a free port)"
        );
    }

    #[test]
    fn ports_come_out_of_urls() {
        assert_eq!(url_port("http://127.0.0.1:3847/"), Some(3847));
        assert_eq!(url_port("http://[::1]:4000/"), Some(4000));
        assert_eq!(url_port("http://localhost/"), None);
    }

    #[test]
    fn a_repeated_project_is_one() {
        let dir = std::env::temp_dir();
        let plain = dir.display().to_string();
        let dotted = format!("{}/.", plain);
        let named = format!("api={plain}");
        assert_eq!(
            distinct_projects(vec![
                plain.clone(),
                dotted,
                named,
                "web=/nonexistent".into()
            ]),
            vec![plain, "web=/nonexistent".to_string()]
        );
        assert_eq!(project_dir("a=b"), "b");
        assert_eq!(project_dir("../a=b"), "../a=b");
    }

    #[test]
    fn only_address_in_use_counts() {
        let error = anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::AddrInUse))
            .context("cannot listen on 127.0.0.1:3847");
        assert!(address_in_use(&error));
        assert!(!address_in_use(&anyhow::anyhow!("other")));
    }
}

//! Warm language servers (issue 6): a per-project daemon that keeps them
//! running between hook calls, so only the first check of a session pays
//! for a server's cold start.
//!
//! - [`remote`]: the hooks' side — find, start (single-flight), replace or
//!   give up on the daemon, and the pool [`Remote`](crate::lsp::pool::Remote)
//!   that sends it checks, falling back in-process on any failure.
//! - [`server`]: the daemon process; [`worker`]: one thread per server
//!   (reuse, restarts with a bound, idle shutdown, files closed).
//! - [`wire`]: the JSON-lines protocol and its handshake; [`paths`]: socket
//!   and locks; [`record`]: `daemon.json`, `servers.json`, the log;
//!   [`procs`]: RSS and leftover process groups from /proc;
//!   [`config`]: the `daemon` config section.
//!
//! Configuration and behaviour are described in README.md, "Warm language
//! servers (daemon)".
//!
//! Uses [`crate::lsp`] and the layers below it; used by the diagnostics (its
//! [`pool`]), session start (pre-start) and the CLI (`ralph-hooks daemon`).

pub mod config;
pub mod detect;
pub mod paths;
pub mod procs;
pub mod record;
pub mod remote;
pub mod server;
pub mod wire;
pub mod worker;

use std::time::Instant;

use crate::hook::ctx::Ctx;
use crate::lsp::Pool;
use crate::lsp::servers::{Registry, Selection, find_binary, workspace_root};

/// The pool the diagnostics checks use: it asks the daemon first, unless
/// the daemon is turned off.
pub fn pool(ctx: &Ctx) -> Pool {
    if let Some(why) = remote::disabled_reason(ctx) {
        ctx.debug(format_args!("daemon: off ({why}); checking in-process"));
        return Pool::default();
    }
    let target = remote::Target::for_ctx(ctx);
    Pool::with_remote(Box::new(remote::DaemonRemote::new(target, ctx.debug)))
}

/// SessionStart: start the daemon and the servers this project used before
/// or whose languages it contains ([`detect`]), without waiting for either.
/// Nothing happens when neither finds a server, or when pre-start or the
/// daemon is off.
pub fn prestart(ctx: &Ctx) {
    let started = Instant::now();
    if let Some(why) = remote::disabled_reason(ctx) {
        ctx.debug(format_args!("daemon: no pre-start ({why})"));
        return;
    }
    let config = config::DaemonConfig::load(ctx);
    if !config.prestart {
        ctx.debug(format_args!(
            "daemon: no pre-start (\"daemon\": {{\"prestart\": false}})"
        ));
        return;
    }
    let servers = prestart_items(ctx, config.prestart_detect);
    if servers.is_empty() {
        ctx.debug(format_args!(
            "daemon: no pre-start (no server used here yet and no language detected)"
        ));
        return;
    }
    let names: Vec<String> = servers.iter().map(|s| s.launch.name.clone()).collect();
    let names = names.join(", ");
    let target = remote::Target::for_ctx(ctx);
    let Some(build) = target.expected_build() else {
        ctx.debug(format_args!("daemon: no pre-start (no ralph-hooks binary)"));
        return;
    };
    if let Some(mut connected) = remote::connect_ready(&target, &build) {
        let sent = connected.conn.call::<serde_json::Value>(
            &wire::Request::Prestart { servers },
            Instant::now() + config.connect_timeout(),
        );
        match sent {
            Ok(_) => ctx.debug(format_args!(
                "daemon: pre-starting {names} in daemon {} ({} ms)",
                connected.hello.pid,
                started.elapsed().as_millis()
            )),
            Err(error) => ctx.debug(format_args!("daemon: no pre-start: {error}")),
        }
        return;
    }
    match remote::spawn_for_prestart(&target) {
        Ok(Some(pid)) => ctx.debug(format_args!(
            "daemon: started daemon {pid}, pre-starting {names} ({} ms)",
            started.elapsed().as_millis()
        )),
        Ok(None) => ctx.debug(format_args!(
            "daemon: no pre-start (a daemon is starting or not answering)"
        )),
        Err(remote::Unavailable(why)) => ctx.debug(format_args!("daemon: no pre-start: {why}")),
    }
}

/// The servers to pre-start: those this project used, started the way the
/// current configuration says (the record only says which ones), and with
/// `detect` those of the languages the project contains.
pub fn prestart_items(ctx: &Ctx, detect: bool) -> Vec<wire::PrestartItem> {
    let recent = record::recent_servers(ctx.store());
    let probes = if detect {
        detect::language_probes(&ctx.project_root)
    } else {
        Vec::new()
    };
    if recent.is_empty() && probes.is_empty() {
        return Vec::new();
    }
    // Only the server registry matters here (the include/exclude globs and
    // the diagnostics section are for checks).
    let registry = Registry::load(&ctx.project_root, ctx.config());
    for warning in &registry.warnings {
        eprintln!("ralph-hooks: warning: {warning}");
    }
    let mut items: Vec<wire::PrestartItem> = recent
        .iter()
        .filter_map(|used| {
            let server = registry
                .servers
                .iter()
                .find(|server| server.enabled && server.name == used.name)?;
            let program = find_binary(&server.command, &ctx.project_root, &[used.root.as_path()])?;
            let launch = server.launch(program, used.root.clone(), &ctx.project_root);
            Some(wire::PrestartItem {
                fingerprint: wire::fingerprint(&launch),
                launch: (&launch).into(),
                startup_ms: server.startup_timeout.map(|d| d.as_millis() as u64),
            })
        })
        .collect();
    for probe in probes {
        let Selection::Found {
            server, program, ..
        } = registry.select(&probe, &ctx.project_root)
        else {
            continue;
        };
        let root = workspace_root(server, &probe, &ctx.project_root);
        if items
            .iter()
            .any(|item| item.launch.name == server.name && item.launch.root == root)
        {
            continue;
        }
        let launch = server.launch(program, root, &ctx.project_root);
        items.push(wire::PrestartItem {
            fingerprint: wire::fingerprint(&launch),
            launch: (&launch).into(),
            startup_ms: server.startup_timeout.map(|d| d.as_millis() as u64),
        });
    }
    items
}

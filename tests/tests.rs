//! Integration tests: they drive the real binaries.

// Temp dirs, clean environments, wildcard comparison.
mod util;
// Skipped tests listed after the run, where cargo's capture cannot hide them.
mod skips;
// fixtures/golden/<binary>/<case>/: stdin in, stdout and state out.
mod golden;
// hooks-config/ agrees with the installer.
mod config;
// Property tests: stdin parser and promise matcher.
mod properties;
// 16 processes at once, and writers killed mid-write.
mod concurrency;
// ralph-hooks install / --uninstall / doctor on a real folder.
mod install;
// Install then uninstall leaves a git project clean; nothing git shows before install.
mod uninstall;
// What the CLI says: a loop's coverage, times, hints, completions, the empty status line.
mod cli_polish;
// A settings file's text edited in place: property tests of util::json_splice.
mod settings_text;
// tests/e2e/scenarios/<name>/: the real Claude Code CLI against a scripted mock API.
mod e2e;
// The real Codex CLI offline against a mock Responses API: a loop under another harness.
mod harness_e2e;
// The guard under Copilot's and Cursor's payloads, several hooks in a row.
mod harness_guard;
// Orchestrator file schemas: seed examples and mutations (issue 5).
mod schema;
// Seed 000 command state, resume, render and path (issue 5).
mod resume;
// Task steps: markdown round trip (properties), transcripts, parallel CLI.
mod tasks;
// The diagnostics hook against the scripted fake language server.
mod lsp_fake;
// Control characters from servers, rules and goals come out escaped.
mod hostile_text;
// Inputs and files too large for the usual path: said, never clean.
mod oversized;
// The diagnostics hook against the real language servers.
mod lsp_real;
// Diagnostics and the Ralph loop: blocking edits, the Stop condition.
mod diagnostics;
// The warm-server daemon (issue 6): reuse, restarts, faults, replacement.
mod daemon;
// src/ layering: no part uses one above it (issue 9).
mod layers;
// The plan → run → sync pipeline, seed 000 gaps, slash commands (issue 15).
mod pipeline;
// Hardening (issue 10): damaged files × every reader, guard bypasses, signals, closed pipes.
mod adversarial;
// `ralph-hooks check` and the goal-only loop (issue 11).
mod project_check;
// The user stays in charge (issue 12): stop phrases, pause/resume, the status line.
mod control;
// Unused variables and imports as warnings (issue 11, AC-LSP-002), real servers.
mod unused;
// PostToolUse for Bash: files changed by a command (issue 11).
mod bash_edits;
// What counts as a change between loop iterations, in and outside git.
mod changes;
// `ralph-hooks check` vs pyright --outputjson and tsc --noEmit (issue 11).
mod check_parity;
// `ralph-hooks monitor` (issue 14): REST, WebSocket/SSE, security, shutdown.
mod monitor;
// The dashboard in headless Chromium over the DevTools protocol (issue 14).
mod monitor_browser;
// Each view of the dashboard in Chromium, with screenshots (issue 32).
mod monitor_views;
// refs, rename, search, rewrite, fix (issue 13).
mod intel;
// Outside edits interleaved with rename, fix and rewrite (issue 30, item 2).
mod edit_races;
// The guard's check of what a Bash command did: restores, pushes, publishes.
mod guard_effects;
// Whose prompt it is: the turn a queued prompt arrives in (attack F1).
mod guard_turns;
// OpenTelemetry export against OTLP receivers on loopback.
mod telemetry;
// The CLI as a person meets it: help, typos, completions, progress, colour.
mod cli_surface;
// How loops end: budgets, no progress, the block cap, API limits, notifications, rewake.
mod endings;
// Language servers' memory in the daemon: our start options take effect (issue 30).
mod server_memory;
// Warm answers equal cold ones after outside changes (issue 30), real servers.
mod fresh;
// README.md and docs/: links, anchors, no tracker numbers, the quick start runs, docs/cli.md current.
mod docs;
// Install routes without Rust: the wheel, npm and plugin artifacts of .ci/dist, offline.
mod dist;
// The plugin route as `ralph-hooks install` and `doctor` see it.
mod plugin_route;
// Completion receipts: written when a loop ends, `verify` re-runs them (issue 33).
mod receipts;
// Holes of the second guard attack: helpers on PATH, unrecordable Stops, unclaimed loops.
mod guard_holes;
// Hooks fed made-up payloads by the agent's own commands: turns, put-backs, holds (third attack).
mod guard_forged;
// First contact: install, uninstall, doctor, commands, dashboard (attack 32).
mod first_contact;
// The aarch64 build installed offline and run under qemu (issue 32).
mod foreign_arch;

//! `ralph-pre-tool-stop-guard`: see [`ralph_hooks::events::pre_tool_use`].

fn main() -> std::process::ExitCode {
    ralph_hooks::run::<ralph_hooks::events::pre_tool_use::PreToolStopGuard>()
}

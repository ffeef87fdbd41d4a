//! `ralph-session-start`: see [`ralph_hooks::events::session_start`].

fn main() -> std::process::ExitCode {
    ralph_hooks::run::<ralph_hooks::events::session_start::SessionStart>()
}

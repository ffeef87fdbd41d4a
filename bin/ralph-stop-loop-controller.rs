//! `ralph-stop-loop-controller`: see [`ralph_hooks::events::stop`].

fn main() -> std::process::ExitCode {
    ralph_hooks::run::<ralph_hooks::events::stop::StopLoopController>()
}

//! `ralph-stop-loop-controller`: see [`ralph_hooks::events::stop`]
//! (`--rewake` selects the asyncRewake registration).

fn main() -> std::process::ExitCode {
    ralph_hooks::events::stop::main()
}

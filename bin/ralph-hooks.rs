//! `ralph-hooks`: the command line; see [`ralph_hooks::cli`].

fn main() -> std::process::ExitCode {
    ralph_hooks::cli::main()
}

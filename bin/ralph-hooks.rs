//! `ralph-hooks`: the command line; see [`ralph_hooks::cli`].

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    ralph_hooks::cli::main()
}

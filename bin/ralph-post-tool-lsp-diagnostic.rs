//! `ralph-post-tool-lsp-diagnostic`: see [`ralph_hooks::events::post_tool_use`].

fn main() -> std::process::ExitCode {
    ralph_hooks::run::<ralph_hooks::events::post_tool_use::PostToolLspDiagnostic>()
}

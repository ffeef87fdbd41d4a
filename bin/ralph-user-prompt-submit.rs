//! `ralph-user-prompt-submit`: see [`ralph_hooks::events::user_prompt_submit`].

fn main() -> std::process::ExitCode {
    ralph_hooks::run::<ralph_hooks::events::user_prompt_submit::UserPromptSubmit>()
}

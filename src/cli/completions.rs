//! `ralph-hooks completions bash|zsh|fish`: the shell completion script for
//! every command, option and listed value, made by clap_complete from the
//! same grammar the CLI parses with.

use std::process::ExitCode;

use clap_complete::Shell;

pub const EXAMPLES: &str = "\
Install (then open a new shell):
  bash:  ralph-hooks completions bash > ~/.local/share/bash-completion/completions/ralph-hooks
  zsh:   ralph-hooks completions zsh > ~/.zfunc/_ralph-hooks
         (with `fpath=(~/.zfunc $fpath); autoload -Uz compinit; compinit` in ~/.zshrc)
  fish:  ralph-hooks completions fish > ~/.config/fish/completions/ralph-hooks.fish";

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_parser = ["bash", "zsh", "fish"])]
    pub shell: String,
}

pub fn run(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let shell = match args.shell.as_str() {
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        _ => Shell::Fish,
    };
    let mut command = super::parser::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "ralph-hooks", &mut script);
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&script)?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

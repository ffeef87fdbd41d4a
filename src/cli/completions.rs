//! `ralph-hooks completions bash|zsh|fish`: the shell completion script for
//! every command, option and listed value, made by clap_complete from the
//! same grammar the CLI parses with.

use std::process::ExitCode;

use clap_complete::Shell;

pub const EXAMPLES: &str = "\
Examples (install the script, then open a new shell):
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
    let script = script(shell);
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(script.as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The script for `shell`.
fn script(shell: Shell) -> String {
    let mut command = super::parser::command();
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut command, "ralph-hooks", &mut bytes);
    let script = String::from_utf8_lossy(&bytes).into_owned();
    match shell {
        Shell::Bash => bash_arms_as_the_loop_names_them(&script),
        _ => script,
    }
}

/// clap_complete's bash script names a subcommand's state
/// `ralph__hooks__subcmd__check` where it walks the words, but labels the
/// `case` arm that completes its options `ralph__subcmd__hooks__subcmd__check`
/// (the hyphen of a hyphenated program name escaped twice; clap issue
/// #6421), so no option or value after a subcommand would ever complete.
/// The arms are renamed to what the walk produces; once clap_complete
/// spells them alike this changes nothing.
fn bash_arms_as_the_loop_names_them(script: &str) -> String {
    script.replace("ralph__subcmd__hooks", "ralph__hooks")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bash_state_the_walk_sets_has_an_arm() {
        let script = script(Shell::Bash);
        let states: Vec<&str> = script
            .lines()
            .filter_map(|line| line.trim().strip_prefix("cmd=\""))
            .filter_map(|rest| rest.strip_suffix('"'))
            .filter(|state| !state.is_empty())
            .collect();
        assert!(states.contains(&"ralph__hooks__subcmd__task__subcmd__step__subcmd__add"));
        for state in states {
            assert!(
                script.contains(&format!("\n        {state})\n")),
                "no arm completes {state}"
            );
        }
    }
}

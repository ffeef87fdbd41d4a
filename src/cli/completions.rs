//! `ralph-hooks completions bash|zsh|fish`: the shell completion script for
//! every command, option and listed value, made by clap_complete from the
//! same grammar the CLI parses with.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use clap_complete::Shell;

pub const EXAMPLES: &str = "\
Examples (install the script, then open a new shell):
  ralph-hooks completions bash --install   # writes it where bash looks, creating the folder
  bash:  mkdir -p ~/.local/share/bash-completion/completions &&
         ralph-hooks completions bash > ~/.local/share/bash-completion/completions/ralph-hooks
  zsh:   mkdir -p ~/.zfunc && ralph-hooks completions zsh > ~/.zfunc/_ralph-hooks
         (with `fpath=(~/.zfunc $fpath); autoload -Uz compinit; compinit` in ~/.zshrc)
  fish:  mkdir -p ~/.config/fish/completions &&
         ralph-hooks completions fish > ~/.config/fish/completions/ralph-hooks.fish";

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_parser = ["bash", "zsh", "fish"])]
    pub shell: String,
    /// Write the script where the shell looks for it (creating the folder) instead of printing it
    #[arg(long)]
    pub install: bool,
}

pub fn run(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let shell = match args.shell.as_str() {
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        _ => Shell::Fish,
    };
    let script = script(shell);
    if args.install {
        let path = install_path(shell, &|name| std::env::var_os(name))?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(&path, script.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!("Wrote {}; open a new shell to use it.", path.display());
        if shell == Shell::Zsh {
            println!(
                "zsh reads it when ~/.zshrc has: fpath=(~/.zfunc $fpath); autoload -Uz compinit; compinit"
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(script.as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Where `shell` looks for the script of a command (the user's own folders).
fn install_path(
    shell: Shell,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> anyhow::Result<PathBuf> {
    let absolute = |name: &str| env(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let home = absolute("HOME").context("HOME is not set: give the path yourself with `>`")?;
    Ok(match shell {
        Shell::Bash => absolute("XDG_DATA_HOME")
            .unwrap_or_else(|| home.join(".local/share"))
            .join("bash-completion/completions/ralph-hooks"),
        Shell::Zsh => home.join(".zfunc/_ralph-hooks"),
        _ => absolute("XDG_CONFIG_HOME")
            .unwrap_or_else(|| home.join(".config"))
            .join("fish/completions/ralph-hooks.fish"),
    })
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

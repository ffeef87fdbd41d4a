//! `--args-from-stdin`: the rest of the command line read from stdin as
//! plain words.
//!
//! The slash commands hand the user's arguments to the CLI through a
//! quoted here-document (`<<'RALPH_HOOKS_ARGUMENTS'`), so the shell Claude
//! Code runs never parses them: an apostrophe in a goal, `$(…)`, `$VAR`
//! or a backtick stay text. Here they are split into words the way a user
//! means them: blanks apart, `"…"` and `'…'` group (a quote without its
//! partner, and a `'` inside a word as in `the user's page`, is just a
//! character), `\` before a quote or a blank keeps it, and nothing is
//! ever expanded or run.

use std::ffi::OsString;
use std::io::Read as _;

use anyhow::Context as _;

/// The flag, as the slash commands write it: the last word of the line.
pub const FLAG: &str = "--args-from-stdin";

/// The most text read from stdin: a goal and its flags, not a file.
const MAX_BYTES: u64 = 64 * 1024;

/// `args` with a trailing [`FLAG`] replaced by the words on stdin.
pub fn expand(mut args: Vec<OsString>) -> anyhow::Result<Vec<OsString>> {
    if args.last().is_none_or(|last| last != FLAG) {
        return Ok(args);
    }
    args.pop();
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .context("cannot read the arguments from stdin")?;
    anyhow::ensure!(
        bytes.len() as u64 <= MAX_BYTES,
        "the arguments on stdin are longer than {MAX_BYTES} bytes"
    );
    let text = String::from_utf8(bytes).context("the arguments on stdin are not UTF-8")?;
    args.extend(split(&text).into_iter().map(OsString::from));
    Ok(args)
}

/// The words of `text` (see the module doc).
pub fn split(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let at_word_start = !in_word;
        if c.is_whitespace() {
            if in_word {
                words.push(std::mem::take(&mut word));
                in_word = false;
            }
            i += 1;
            continue;
        }
        in_word = true;
        match c {
            // A quote groups up to its partner; without one, or a `'`
            // inside a word (`user's`), it is an ordinary character.
            '"' | '\'' if c == '"' || at_word_start => match partner(&chars[i + 1..], c) {
                Some(length) => {
                    let inner = &chars[i + 1..i + 1 + length];
                    if c == '"' {
                        let mut k = 0;
                        while k < inner.len() {
                            if inner[k] == '\\' && matches!(inner.get(k + 1), Some('"' | '\\')) {
                                k += 1;
                            }
                            word.push(inner[k]);
                            k += 1;
                        }
                    } else {
                        word.extend(inner);
                    }
                    i += length + 2;
                }
                None => {
                    word.push(c);
                    i += 1;
                }
            },
            '\\' if chars.get(i + 1).is_some_and(|&next| {
                next == '"' || next == '\'' || next == '\\' || next.is_whitespace()
            }) =>
            {
                word.push(chars[i + 1]);
                i += 2;
            }
            c => {
                word.push(c);
                i += 1;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Where the quote `quote` that opened `rest` closes: `"` skips `\"`.
fn partner(rest: &[char], quote: char) -> Option<usize> {
    let mut k = 0;
    while k < rest.len() {
        match rest[k] {
            '\\' if quote == '"' => k += 2,
            c if c == quote => return Some(k),
            _ => k += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_split_as_the_user_means_them_and_never_expanded() {
        assert_eq!(
            split("fix the user's login page --promise D"),
            ["fix", "the", "user's", "login", "page", "--promise", "D"]
        );
        assert_eq!(
            split("\"make $(id -un) and `uname` pass\" --check 'test -f a b'\n"),
            ["make $(id -un) and `uname` pass", "--check", "test -f a b"]
        );
        assert_eq!(
            split("a\\ b \"say \\\"hi\\\"\" ''"),
            ["a b", "say \"hi\"", ""]
        );
        assert_eq!(split("  \n "), Vec::<String>::new());
        assert_eq!(
            split("the user's and the admin's page 'it'"),
            ["the", "user's", "and", "the", "admin's", "page", "it"]
        );
    }
}

//! A line split into words the way a POSIX shell treats quotes and
//! backslashes — `'…'` literal, `"…"` with `\"`, `\\`, `\$` and `` \` ``,
//! `\x` outside quotes, a word made of several quoted parts — and nothing
//! else: no expansion, no globbing. Hook handlers' command lines (which
//! program runs) and the user's slash-command arguments in sandbox mode are
//! read with it; the hook binaries link no shell reader for this.

/// Where the words end.
#[derive(Debug, Clone, Copy)]
pub struct Until {
    /// At the first operator (`;`, `|`, `&`, `<`, `>`), as for a command
    /// line's own words; otherwise operators are text like any other.
    pub operator: bool,
    /// After this many words.
    pub max: usize,
}

impl Until {
    /// Every word of the text, operators included as text.
    pub const ALL: Until = Until {
        operator: false,
        max: usize::MAX,
    };
}

/// The words of `text` (see the module's documentation).
pub fn split(text: &str, until: Until) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                    if words.len() == until.max {
                        return words;
                    }
                }
            }
            ';' | '|' | '&' | '<' | '>' if until.operator => {
                // `2>>log`: the `2` belongs to the redirection.
                if in_word && !word.chars().all(|d| d.is_ascii_digit()) {
                    words.push(word);
                }
                return words;
            }
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(next @ ('"' | '\\' | '$' | '`')) => word.push(next),
                            Some(next) => {
                                word.push('\\');
                                word.push(next);
                            }
                            None => word.push('\\'),
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

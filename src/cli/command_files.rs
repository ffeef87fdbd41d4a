//! The slash-command files install writes, and how to tell them from a
//! user's: each ends with a mark that carries the sha256 of the text above
//! it. A file with the mark whose text no longer has that hash was edited
//! after install: install leaves it alone instead of overwriting the edit,
//! and uninstall keeps it instead of deleting it. (Files written before the
//! mark carried a hash count as unedited.)

use sha2::Digest as _;

/// What every mark starts with.
const MARK_START: &str = "<!-- installed by ralph-hooks";

/// Whose a command file is.
#[derive(Debug, PartialEq, Eq)]
pub enum Owner {
    /// No mark: the user's own file.
    User,
    /// Ours, as install wrote it.
    Ours,
    /// Ours, changed since install wrote it.
    Edited,
}

fn sha256_hex(text: &str) -> String {
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// `body` with its mark.
pub fn stamped(body: &str) -> String {
    let text = format!("{body}\n");
    let hash = sha256_hex(&text);
    format!("{text}{MARK_START}; sha256 {hash} -->\n")
}

/// Whose `existing` is.
pub fn owner(existing: &str) -> Owner {
    let Some(at) = existing.rfind(MARK_START) else {
        return Owner::User;
    };
    let mark = &existing[at..];
    let Some(hash) = mark
        .strip_prefix(MARK_START)
        .and_then(|rest| rest.strip_prefix("; sha256 "))
        .and_then(|rest| rest.split_whitespace().next())
    else {
        return Owner::Ours;
    };
    if sha256_hex(&existing[..at]) == hash {
        Owner::Ours
    } else {
        Owner::Edited
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_after_install_is_seen() {
        let file = stamped("---\ndescription: x\n---\n\nrun it");
        assert_eq!(owner(&file), Owner::Ours);
        assert_eq!(
            owner(&file.replace("run it", "run it \"quoted\"")),
            Owner::Edited
        );
        assert_eq!(owner("my own command\n"), Owner::User);
        assert_eq!(
            owner("older\n<!-- installed by ralph-hooks -->\n"),
            Owner::Ours
        );
    }
}

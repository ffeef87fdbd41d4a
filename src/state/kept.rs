//! A second copy of a document whose loss would end unattended work:
//! `.<name>.kept` beside it, rewritten at each save of ours while the
//! document says it is worth one ([`super::Versioned::worth_a_copy`]: a
//! RUNNING loop), removed by the save that says it is not.
//!
//! Why: the guard's check after a Bash command puts back a `loop.json` the
//! command emptied — but only when its snapshot before the command could be
//! taken. A command that fills the disk first leaves no snapshot, and the
//! `{}` it writes next was then moved aside as corrupt: the loop was gone
//! and the next Stop let "All done." through (attack finding G5). With the
//! copy, a document of ours that is missing, emptied or unparsable while the
//! copy says it matters is put back from the copy and reported, never read
//! as "no loop". The copy is written before the disk fills, and putting it
//! back needs no free space (a hard link renamed into place) when writing
//! a fresh file cannot be done.

use std::path::{Path, PathBuf};

/// The copy of `path`.
pub fn path_for(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.kept"))
}

/// Puts `text` (the copy's content) at `path`: a fresh file, or, when that
/// cannot be written (a full disk), the copy itself hard-linked into place
/// (until the next save of ours makes them two files again).
pub fn put_back(path: &Path, copy: &Path, text: &str) -> anyhow::Result<()> {
    match super::write_atomic(path, text.as_bytes()) {
        Ok(()) => Ok(()),
        Err(error) => {
            let temp = super::temp_beside(path)?;
            if std::fs::hard_link(copy, &temp).is_err() {
                return Err(error);
            }
            std::fs::rename(&temp, path).map_err(|rename| {
                let _ = std::fs::remove_file(&temp);
                anyhow::anyhow!("{error:#}; cannot link the copy into place either: {rename}")
            })
        }
    }
}

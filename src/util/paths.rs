//! Paths as text: `.` and `..` taken out without asking the file system,
//! for paths that may not exist yet (a search folder named in a
//! configuration, a state file about to be written) or whose spelling must
//! not depend on links (the project's path as named).

use std::path::{Component, Path, PathBuf};

/// `path` with `.` and `..` taken out by the text alone (`a/../b` is `b`,
/// whatever `a` is).
pub fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_go_by_the_text() {
        assert_eq!(
            lexically_normal(Path::new("/a/./b/../c")),
            Path::new("/a/c")
        );
        assert_eq!(lexically_normal(Path::new("/../x")), Path::new("/x"));
        assert_eq!(lexically_normal(Path::new("a/b/..")), Path::new("a"));
    }
}

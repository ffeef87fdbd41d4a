//! `file://` URIs for paths, and back.
//!
//! Servers re-encode the URIs we send (pyright, typescript-language-server and
//! clangd write `+` and `@` as `%2B` and `%40`; see
//! `shared/reference/language-servers.md` §3), so an incoming URI is never
//! compared as a string: it is decoded to a path and compared as a path.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// The `file://` URI of an absolute path, percent-encoding every byte that is
/// not unreserved or `/`.
pub fn from_path(path: &Path) -> String {
    let mut uri = String::from("file://");
    for &byte in path.as_os_str().as_bytes() {
        let keep = byte.is_ascii_alphanumeric() || matches!(byte, b'/' | b'-' | b'.' | b'_' | b'~');
        if keep {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The path a `file://` URI names, or `None` for other schemes and remote
/// hosts. Percent escapes are decoded; a broken escape is kept as written.
pub fn to_path(uri: &str) -> Option<PathBuf> {
    let rest = uri
        .strip_prefix("file://")
        .or_else(|| uri.strip_prefix("FILE://"))?;
    // `file:///p` has an empty host; `file://localhost/p` names this machine.
    let rest = if let Some(after) = rest.strip_prefix("localhost") {
        after
    } else {
        rest
    };
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte == b'%'
            && index + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[index + 1]), hex(bytes[index + 2]))
        {
            decoded.push(high * 16 + low);
            index += 3;
            continue;
        }
        decoded.push(byte);
        index += 1;
    }
    Some(PathBuf::from(OsString::from_vec(decoded)))
}

fn hex(byte: u8) -> Option<u8> {
    char::from(byte).to_digit(16).map(|digit| digit as u8)
}

/// The form paths are compared in: canonical when the file exists (so
/// symlinked temp dirs and `..` agree), else as given.
pub fn comparable(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_odd_characters() {
        let path = Path::new("/tmp/ä+b@c d/%x.py");
        let uri = from_path(path);
        assert_eq!(uri, "file:///tmp/%C3%A4%2Bb%40c%20d/%25x.py");
        assert_eq!(to_path(&uri).unwrap(), path);
    }

    #[test]
    fn decodes_what_servers_send_back() {
        // The url crate leaves `+` and `@` bare; pyright re-encodes them.
        let ours = to_path("file:///w/%C3%A4+b@c%20d.py").unwrap();
        let theirs = to_path("file:///w/%C3%A4%2Bb%40c%20d.py").unwrap();
        assert_eq!(ours, theirs);
        assert_eq!(
            to_path("file://localhost/w/a.py").unwrap(),
            Path::new("/w/a.py")
        );
    }

    #[test]
    fn other_schemes_and_broken_escapes() {
        assert_eq!(to_path("untitled:Untitled-1"), None);
        assert_eq!(to_path("file://host/share/a"), None);
        assert_eq!(to_path("file:///a%2").unwrap(), Path::new("/a%2"));
        assert_eq!(to_path("file:///a%zz").unwrap(), Path::new("/a%zz"));
    }
}

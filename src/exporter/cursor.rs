//! The exporter's place in `events.jsonl`, and reading the log from it.
//!
//! `telemetry/cursor.json` keeps which file (device and inode), `offset`
//! (the next byte to ship) and `end` (how far the exporter had seen: the
//! bytes between `offset` and `end` are owed to the collector). Bytes past
//! `end` that a new exporter finds before the first event of the process
//! that started it were logged while no exporter ran, that is while
//! telemetry was off: they are skipped, never sent. Owed bytes beyond the
//! backlog bound are dropped oldest first, whole lines, and counted.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::state::Versioned;

/// The most bytes one read takes in, whatever the batch size.
const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    #[serde(default)]
    pub version: u64,
    /// `(device, inode)` of the log the offsets are about.
    #[serde(default)]
    pub file: Option<(u64, u64)>,
    pub offset: u64,
    pub end: u64,
}

impl Versioned for Cursor {
    const VERSION: u64 = 1;
}

/// The log's identity and length now; `None` when there is none.
pub fn probe(path: &Path) -> Option<((u64, u64), u64)> {
    let metadata = std::fs::symlink_metadata(path).ok()?;
    if !metadata.is_file() {
        return None;
    }
    Some(((metadata.dev(), metadata.ino()), metadata.len()))
}

/// Whole lines read from one offset.
#[derive(Debug, Default)]
pub struct Lines {
    /// Each line without its newline.
    pub lines: Vec<String>,
    /// Where the next read starts: after the last whole line taken.
    pub next: u64,
}

/// Reads up to `max_lines` whole lines in `[offset, limit)`. A last line
/// without its newline is being written (or was cut): it is left for later.
pub fn read_lines(
    path: &Path,
    offset: u64,
    limit: u64,
    max_lines: usize,
) -> std::io::Result<Lines> {
    let mut lines = Lines {
        lines: Vec::new(),
        next: offset,
    };
    if limit <= offset {
        return Ok(lines);
    }
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let span = (limit - offset).min(MAX_READ_BYTES);
    let mut reader = BufReader::new(file.take(span));
    let mut buffer = Vec::new();
    while lines.lines.len() < max_lines {
        buffer.clear();
        let n = reader.read_until(b'\n', &mut buffer)?;
        if n == 0 || buffer.last() != Some(&b'\n') {
            break;
        }
        lines.next += n as u64;
        buffer.pop();
        lines
            .lines
            .push(String::from_utf8_lossy(&buffer).into_owned());
    }
    // A single line longer than one read: skip it whole rather than stall.
    if lines.lines.is_empty() && span == MAX_READ_BYTES {
        let skip_to = next_line_start(path, offset + span)?;
        lines.next = skip_to.min(limit);
        lines.lines.push(String::new());
    }
    Ok(lines)
}

/// The first line start at or after `at` (the file's length when none).
pub fn next_line_start(path: &Path, at: u64) -> std::io::Result<u64> {
    if at == 0 {
        return Ok(0);
    }
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(at - 1))?;
    let mut reader = BufReader::new(file);
    let mut buffer = Vec::new();
    let n = reader.read_until(b'\n', &mut buffer)?;
    Ok(at - 1 + n as u64)
}

/// Newlines in `[from, to)`: how many events a skip or a drop passes over.
pub fn count_lines(path: &Path, from: u64, to: u64) -> std::io::Result<u64> {
    if to <= from {
        return Ok(0);
    }
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    let mut reader = file.take(to - from);
    let mut buffer = [0u8; 64 * 1024];
    let mut count = 0;
    loop {
        let n = reader.read(&mut buffer)?;
        if n == 0 {
            return Ok(count);
        }
        count += buffer[..n].iter().filter(|b| **b == b'\n').count() as u64;
    }
}

/// Where a backlog over `bound` bytes starts again: the first whole line of
/// its last `bound` bytes. `None` when it is within the bound.
pub fn trim_to_bound(
    path: &Path,
    offset: u64,
    owed_to: u64,
    bound: u64,
) -> std::io::Result<Option<u64>> {
    if owed_to.saturating_sub(offset) <= bound {
        return Ok(None);
    }
    let at = next_line_start(path, owed_to - bound)?;
    Ok(Some(at.max(offset)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(name: &str, text: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("ralph-cursor-{name}-{}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn whole_lines_only_and_a_partial_last_line_waits() {
        let path = log("partial", "a\nbb\ncc");
        let lines = read_lines(&path, 0, 7, 10).unwrap();
        assert_eq!(lines.lines, ["a", "bb"]);
        assert_eq!(lines.next, 5);
        let again = read_lines(&path, 2, 7, 1).unwrap();
        assert_eq!(again.lines, ["bb"]);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn the_bound_keeps_the_newest_whole_lines() {
        let path = log("bound", "0123\n4567\n89ab\n");
        assert_eq!(trim_to_bound(&path, 0, 15, 20).unwrap(), None);
        // The last 6 bytes start inside "4567\n": the next line starts at 10.
        assert_eq!(trim_to_bound(&path, 0, 15, 6).unwrap(), Some(10));
        assert_eq!(count_lines(&path, 0, 10).unwrap(), 2);
        assert_eq!(next_line_start(&path, 5).unwrap(), 5);
        std::fs::remove_file(path).unwrap();
    }
}

//! File IO with the path in every error, and the atomic write.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use anyhow::Context as _;

/// Reads a UTF-8 file; a missing file is `None`.
pub fn read_optional(path: &Path) -> anyhow::Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Replaces `path` with `bytes` so that a crash at any point leaves either
/// the old file or the new one: write a temp file beside it (rename works
/// only within one filesystem), fsync it, rename it over, fsync the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .context("state path has no parent directory")?;
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let temp = dir.join(format!(".{file_name}.tmp-{}-{nanos}", std::process::id()));
    let result = (|| {
        let mut file =
            File::create(&temp).with_context(|| format!("cannot create {}", temp.display()))?;
        file.write_all(bytes)
            .with_context(|| format!("cannot write {}", temp.display()))?;
        file.sync_all()
            .with_context(|| format!("cannot sync {}", temp.display()))?;
        fs::rename(&temp, path)
            .with_context(|| format!("cannot rename {} to {}", temp.display(), path.display()))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
        return result;
    }
    // The rename is durable only once the directory entry is; failing to sync
    // a directory (some filesystems refuse) still leaves a whole file.
    if let Ok(dir_handle) = File::open(dir) {
        let _ = dir_handle.sync_all();
    }
    Ok(())
}

/// The pid of the writer that owns a temp file name made by [`write_atomic`]
/// (`.<name>.tmp-<pid>-<nanos>`), or `None` for any other name.
pub fn temp_writer_pid(file_name: &str) -> Option<u32> {
    if !file_name.starts_with('.') {
        return None;
    }
    let (_, suffix) = file_name.rsplit_once(".tmp-")?;
    let (pid, nanos) = suffix.split_once('-')?;
    nanos.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// Appends `line` and a newline. Callers hold the file's lock.
pub fn append_line(path: &Path, line: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut record = String::with_capacity(line.len() + 1);
    record.push_str(line);
    record.push('\n');
    // One write call per record, so even an unlocked reader sees whole lines
    // except possibly the last.
    file.write_all(record.as_bytes())
        .with_context(|| format!("cannot append to {}", path.display()))
}

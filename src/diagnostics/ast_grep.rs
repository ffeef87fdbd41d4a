//! ast-grep rule findings merged into a file's diagnostics (source
//! `ast-grep`), when the project has an `sgconfig.yml` and ast-grep is
//! installed. It runs beside the language server and gets its own timeout;
//! a missing or failing ast-grep is skipped with a warning, never a fault.
//!
//! `sg` is also shadow-utils' "execute command as another group", so a bare
//! `sg` is used only after its `--version` says it is ast-grep.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::model::{Diag, Severity, fold_message};
use crate::lsp::servers::find_binary;
use crate::util::process::GroupChild;

/// How long `sg --version` may take to prove it is ast-grep.
const VERSION_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A running `ast-grep scan`.
pub struct Scan {
    child: GroupChild,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    program: PathBuf,
}

/// The project's ast-grep config, if any.
pub fn config_file(project_root: &Path) -> Option<PathBuf> {
    ["sgconfig.yml", "sgconfig.yaml"]
        .iter()
        .map(|name| project_root.join(name))
        .find(|path| path.is_file())
}

/// The ast-grep binary: `ast-grep`, else an `sg` that says it is ast-grep.
pub fn find_program(project_root: &Path) -> Option<PathBuf> {
    let roots = [project_root];
    if let Some(path) = find_binary("ast-grep", project_root, &roots) {
        return Some(path);
    }
    let sg = find_binary("sg", project_root, &roots)?;
    is_ast_grep(&sg).then_some(sg)
}

/// Whether `program --version` names ast-grep (shadow-utils' `sg` does not).
pub fn is_ast_grep(program: &Path) -> bool {
    let mut command = Command::new(program);
    command
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let Ok(mut child) = GroupChild::spawn(&mut command) else {
        return false;
    };
    let mut stdout = child.child_mut().stdout.take();
    match child.wait_timeout(VERSION_PROBE_TIMEOUT) {
        Ok(Some(_)) => {
            let mut text = String::new();
            if let Some(stdout) = stdout.as_mut() {
                let _ = stdout.take(4096).read_to_string(&mut text);
            }
            text.to_lowercase().contains("ast-grep")
        }
        _ => false,
    }
}

/// Starts `ast-grep scan --json=compact <file>` in the project; `None`
/// when the project has no sgconfig.yml or ast-grep is not installed.
pub fn start(project_root: &Path, file: &Path) -> Option<Result<Scan, String>> {
    config_file(project_root)?;
    let Some(program) = find_program(project_root) else {
        return Some(Err(
            "the project has an sgconfig.yml but ast-grep is not installed (npm install -g @ast-grep/cli, or pip install ast-grep-cli)".into(),
        ));
    };
    let mut command = Command::new(&program);
    command
        .args(["scan", "--json=compact"])
        .arg(file)
        .current_dir(project_root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match GroupChild::spawn(&mut command) {
        Ok(child) => child,
        Err(error) => return Some(Err(format!("cannot start {}: {error}", program.display()))),
    };
    // Both pipes are drained on threads so a large report cannot block it.
    let stdout = child.child_mut().stdout.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    });
    let stderr = child.child_mut().stderr.take().map(|pipe| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.take(64 * 1024).read_to_end(&mut bytes);
            bytes
        })
    });
    Some(Ok(Scan {
        child,
        stdout,
        stderr,
        program,
    }))
}

impl Scan {
    /// Waits until `deadline` for the findings.
    pub fn finish(mut self, deadline: Instant) -> Result<Vec<Diag>, String> {
        let timeout = deadline.saturating_duration_since(Instant::now());
        let status = match self.child.wait_timeout(timeout) {
            Ok(Some(status)) => status,
            Ok(None) => {
                self.child.kill();
                return Err(format!(
                    "{} timed out after {:.1} s",
                    self.program.display(),
                    timeout.as_secs_f64()
                ));
            }
            Err(error) => return Err(format!("cannot wait for ast-grep: {error}")),
        };
        let stdout = self
            .stdout
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let stderr = self
            .stderr
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        // ast-grep exits 1 when it found error-level matches; the JSON is
        // what counts.
        match parse(&stdout) {
            Some(diags) => Ok(diags),
            None => Err(format!(
                "ast-grep failed ({status}): {}",
                String::from_utf8_lossy(&stderr)
                    .lines()
                    .next()
                    .unwrap_or("no output")
            )),
        }
    }
}

/// Parses `--json=compact` output; `None` when it is not a JSON array.
pub fn parse(stdout: &[u8]) -> Option<Vec<Diag>> {
    let value: Value = serde_json::from_slice(stdout).ok()?;
    let matches = value.as_array()?;
    let mut diags = Vec::new();
    for found in matches {
        let severity = match found.get("severity").and_then(Value::as_str) {
            Some("error") => Severity::Error,
            Some("warning") => Severity::Warning,
            Some("info") => Severity::Info,
            Some("hint") => Severity::Hint,
            // "off" rules report nothing.
            _ => continue,
        };
        let position = |key: &str| {
            found
                .pointer(&format!("/range/start/{key}"))
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0)
        };
        let message = found
            .get("message")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or("ast-grep rule matched");
        diags.push(Diag {
            line: position("line") + 1,
            column: position("column") + 1,
            severity,
            source: Some("ast-grep".into()),
            code: found
                .get("ruleId")
                .and_then(Value::as_str)
                .map(str::to_string),
            message: fold_message(message),
        });
    }
    Some(diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_compact_report() {
        let json = br#"[{"text":"eval(\"1+1\")","range":{"byteOffset":{"start":10,"end":21},"start":{"line":1,"column":4},"end":{"line":1,"column":15}},"file":"a.py","ruleId":"no-eval","severity":"error","note":"n","message":"Do not call eval"},
                        {"range":{"start":{"line":0,"column":0}},"ruleId":"quiet","severity":"off","message":"x"}]"#;
        let diags = parse(json).unwrap();
        assert_eq!(diags.len(), 1);
        assert_eq!(
            diags[0].render("a.py"),
            "a.py:2:5 error [ast-grep no-eval] Do not call eval"
        );
        assert!(parse(b"Error: no config").is_none());
    }

    #[test]
    fn shadow_utils_sg_is_not_ast_grep() {
        // /usr/bin/sg on Debian is shadow-utils; when present it must fail
        // the probe. `true` prints nothing, so it fails it too.
        for program in ["/usr/bin/sg", "/bin/true"] {
            let path = Path::new(program);
            if path.exists() {
                assert!(!is_ast_grep(path), "{program} taken for ast-grep");
            }
        }
    }
}

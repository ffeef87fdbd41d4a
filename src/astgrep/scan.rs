//! Running a rule set over source text or files. Files are scanned in
//! parallel (one worker per core, pulling from a shared index), and results
//! come back in the order the files were given.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ast_grep_config::{RuleConfig, Severity};
use ast_grep_core::matcher::MatcherExt;
use ast_grep_core::tree_sitter::{LanguageExt, StrDoc};
use ast_grep_core::{Matcher, Node, NodeMatch};
use ast_grep_language::SupportLang;

use super::lang::Lang;
use super::rules::RuleSet;
use crate::util::fsread::{self, Links};

/// Files larger than this are skipped, with their reason: the one limit
/// for source files, the same as the language servers'.
pub const MAX_FILE_BYTES: u64 = crate::util::fsread::limits::SOURCE;

/// How serious a finding is (the rule's `severity`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Error,
    Warning,
    Info,
    Hint,
}

impl Level {
    pub fn as_str(&self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Info => "info",
            Level::Hint => "hint",
        }
    }
}

/// A rule's suggested replacement for the matched text: replace bytes
/// `start_byte..end_byte` of the file with `replacement`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub start_byte: usize,
    pub end_byte: usize,
    pub replacement: String,
}

/// One rule match. Lines and columns are 1-based; columns count characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub path: PathBuf,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub rule_id: String,
    pub severity: Level,
    pub message: String,
    pub note: Option<String>,
    pub fix: Option<Fix>,
}

/// One file's result: its findings, or why it could not be scanned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileScan {
    pub path: PathBuf,
    pub findings: Vec<Finding>,
    /// Unreadable, not UTF-8, too large: the file was not scanned.
    pub skipped: Option<String>,
}

impl FileScan {
    /// `results` of a scan of `files` (`None`: not scanned) with each file
    /// not scanned said to have failed: the parser crate panicked on it.
    pub fn or_failed(results: Vec<Option<FileScan>>, files: &[PathBuf]) -> Vec<FileScan> {
        results
            .into_iter()
            .zip(files)
            .map(|(scan, path)| {
                scan.unwrap_or_else(|| FileScan {
                    path: path.clone(),
                    findings: Vec::new(),
                    skipped: Some("the ast-grep scan failed on this file".into()),
                })
            })
            .collect()
    }
}

impl RuleSet {
    /// The findings in one text, as if it were the file at `path` (its
    /// extension picks the language; rule `files`/`ignores` globs see it).
    /// A language without rules yields nothing. Sorted by position.
    pub fn scan_source(&self, path: &Path, source: &str) -> Vec<Finding> {
        let Some(lang) = Lang::from_path(path) else {
            return Vec::new();
        };
        let glob_path = match &self.base {
            Some(base) => path.strip_prefix(base).unwrap_or(path),
            None => path,
        };
        let rules = self.collection.get_rule_from_lang(glob_path, lang.0);
        if rules.is_empty() {
            return Vec::new();
        }
        let root = lang.0.ast_grep(as_parsed(source));
        // One walk of the tree for all the rules, each tried only on the
        // node kinds it can match (what `ast-grep scan` does): a walk per
        // rule, as `find_all` makes, cost the standard library's 565 files
        // half as much again as `ast-grep scan` with the same rules.
        let kinds: Vec<_> = rules
            .iter()
            .map(|rule| rule.matcher.potential_kinds())
            .collect();
        let mut findings = Vec::new();
        for node in root.root().dfs() {
            let kind = usize::from(node.kind_id());
            for (rule, kinds) in rules.iter().zip(&kinds) {
                if kinds.as_ref().is_some_and(|kinds| !kinds.contains(kind)) {
                    continue;
                }
                if let Some(found) = rule.matcher.match_node(node.clone()) {
                    findings.push(finding(path, rule, &found));
                }
            }
        }
        findings
            .sort_by(|a, b| (a.line, a.column, &a.rule_id).cmp(&(b.line, b.column, &b.rule_id)));
        findings
    }

    /// Scans files in parallel; one result per file, in the given order.
    pub fn scan_files(&self, files: &[PathBuf]) -> Vec<FileScan> {
        let (results, _) = self.scan_files_until(files, &AtomicBool::new(false));
        FileScan::or_failed(results, files)
    }

    /// [`RuleSet::scan_files`] that takes no new file once `stop` is set:
    /// `None` for a file not scanned (not reached, or the parser failed),
    /// and whether it was stopped before the end.
    pub fn scan_files_until(
        &self,
        files: &[PathBuf],
        stop: &AtomicBool,
    ) -> (Vec<Option<FileScan>>, bool) {
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(files.len().max(1));
        let next = AtomicUsize::new(0);
        let stopped = AtomicBool::new(false);
        let mut results: Vec<Option<FileScan>> = vec![None; files.len()];
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            if stop.load(Ordering::Relaxed) {
                                stopped.store(true, Ordering::Relaxed);
                                break;
                            }
                            let index = next.fetch_add(1, Ordering::Relaxed);
                            let Some(path) = files.get(index) else {
                                break;
                            };
                            done.push((index, self.scan_file(path)));
                        }
                        done
                    })
                })
                .collect();
            for handle in handles {
                // A panic inside the parser crate must not take the caller down.
                if let Ok(done) = handle.join() {
                    for (index, scan) in done {
                        results[index] = Some(scan);
                    }
                }
            }
        });
        let stopped = stopped.load(Ordering::Relaxed) && results.iter().any(Option::is_none);
        (results, stopped)
    }

    /// Scans one file from disk.
    pub fn scan_file(&self, path: &Path) -> FileScan {
        let skipped = |why: String| FileScan {
            path: path.to_path_buf(),
            findings: Vec::new(),
            skipped: Some(why),
        };
        // The one bounded, type-checked reader: a FIFO or a huge file in the
        // tree is skipped with its reason, never read.
        match fsread::read_text(path, MAX_FILE_BYTES, Links::Follow) {
            Ok(Some(text)) => match parse_hazard(path, &text) {
                Some(why) => skipped(why),
                None => FileScan {
                    path: path.to_path_buf(),
                    findings: self.scan_source(path, &text),
                    skipped: None,
                },
            },
            Ok(None) => skipped("it no longer exists".into()),
            Err(error) => skipped(error.reason()),
        }
    }
}

/// Consecutive comment lines in a Python file past which it is not
/// parsed: tree-sitter-python's external scanner takes time growing with
/// the square of such a run (500 KB of them: about 10 s CPU in `ast-grep`'s
/// own CLI, minutes in a debug build), while real code of that size parses
/// in a fraction of a second.
pub const MAX_COMMENT_RUN: usize = 2_000;

/// Why `text` is not given to the parser, when its shape would make the
/// parser run for minutes: `None` for every ordinary file.
pub fn parse_hazard(path: &Path, text: &str) -> Option<String> {
    let python = path
        .extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| matches!(ext, "py" | "pyi" | "pyw"));
    if !python {
        return None;
    }
    let (mut run, mut longest) = (0usize, 0usize);
    // Blank lines inside the run do not end it (nor the parser's trouble).
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with('#') {
            run += 1;
            longest = longest.max(run);
        } else if !line.is_empty() {
            run = 0;
        }
    }
    (longest > MAX_COMMENT_RUN).then(|| {
        format!(
            "{longest} comment lines in a row (more than {MAX_COMMENT_RUN}), which the Python parser takes minutes over: not scanned by the rules"
        )
    })
}

fn finding(
    path: &Path,
    rule: &RuleConfig<SupportLang>,
    found: &NodeMatch<StrDoc<SupportLang>>,
) -> Finding {
    let node = found.get_node();
    let (line, column, end_line, end_column) = range_of(node);
    let fix = rule.fixer.first().map(|fixer| {
        let edit = found.make_edit(&rule.matcher, fixer);
        Fix {
            start_byte: edit.position,
            end_byte: edit.position + edit.deleted_length,
            replacement: String::from_utf8_lossy(&edit.inserted_text).into_owned(),
        }
    });
    Finding {
        path: path.to_path_buf(),
        line,
        column,
        end_line,
        end_column,
        rule_id: rule.id.clone(),
        severity: level(&rule.severity),
        message: rule.get_message(found),
        note: rule.note.as_ref().map(|note| note.trim_end().to_string()),
        fix,
    }
}

/// `source` as the parser is given it: a lone carriage return (a line end
/// of old Mac files, valid Python) becomes a line feed. tree-sitter counts
/// only line feeds as line ends, so a lone-CR file was one long line: its
/// findings at wrong lines and columns, and Python's parse one syntax
/// error (engine attack E-15). One byte for one, so every byte offset
/// (a fix's, a rewrite's) holds for the original text.
pub fn as_parsed(source: &str) -> std::borrow::Cow<'_, str> {
    if !source.contains('\r') {
        return std::borrow::Cow::Borrowed(source);
    }
    let bytes = source.as_bytes();
    let lone = |at: usize| bytes[at] == b'\r' && bytes.get(at + 1) != Some(&b'\n');
    if !(0..bytes.len()).any(lone) {
        return std::borrow::Cow::Borrowed(source);
    }
    let replaced: Vec<u8> = (0..bytes.len())
        .map(|at| if lone(at) { b'\n' } else { bytes[at] })
        .collect();
    // Only an ASCII byte was swapped for another: still UTF-8.
    std::borrow::Cow::Owned(String::from_utf8(replaced).unwrap_or_else(|_| source.to_string()))
}

/// A node's 1-based (line, column, end line, end column), columns in characters.
pub(crate) fn range_of(node: &Node<StrDoc<SupportLang>>) -> (u32, u32, u32, u32) {
    let start = node.start_pos();
    let end = node.end_pos();
    let one = |n: usize| u32::try_from(n + 1).unwrap_or(u32::MAX);
    (
        one(start.line()),
        one(start.column(node)),
        one(end.line()),
        one(end.column(node)),
    )
}

fn level(severity: &Severity) -> Level {
    match severity {
        Severity::Error => Level::Error,
        Severity::Warning => Level::Warning,
        Severity::Info => Level::Info,
        Severity::Hint | Severity::Off => Level::Hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_comment_run_is_a_hazard_even_with_blank_lines_in_it() {
        let path = Path::new("m.py");
        assert!(parse_hazard(path, &"# c\n".repeat(2_001)).is_some());
        assert!(parse_hazard(path, &"# c\n\n".repeat(2_001)).is_some());
        assert!(parse_hazard(path, &"# c\nx = 1\n".repeat(5_000)).is_none());
        assert!(parse_hazard(Path::new("m.rs"), &"# c\n".repeat(5_000)).is_none());
    }

    #[test]
    fn a_lone_carriage_return_ends_a_line_for_the_rules() {
        // Engine attack E-15: `eval` on the fourth line was found at 1:21.
        let rules = RuleSet::builtin();
        let lone = "x = 1\ry: int = \"s\"\r\reval(\"1\")\r";
        let found = rules.scan_source(Path::new("a.py"), lone);
        let eval = found
            .iter()
            .find(|f| f.rule_id == "no-eval")
            .expect("no-eval");
        assert_eq!((eval.line, eval.column), (4, 1));
        // The same file with line feeds and with CRLF finds the same place.
        for ending in ["\n", "\r\n"] {
            let other = lone.replace('\r', ending);
            let found = rules.scan_source(Path::new("a.py"), &other);
            let same = found.iter().find(|f| f.rule_id == "no-eval").unwrap();
            assert_eq!((same.line, same.column), (4, 1), "{ending:?}");
        }
        assert_eq!(as_parsed("a\r\nb\rc"), "a\r\nb\nc");
        assert!(matches!(as_parsed("a\r\nb"), std::borrow::Cow::Borrowed(_)));
    }
}

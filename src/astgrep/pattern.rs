//! Pattern search and rewrite over one text, for `ralph-hooks search` and
//! `rewrite`. A pattern is code of the file's language with
//! meta-variables: `$VAR` matches one node, `$$$ARGS` any number of nodes,
//! `$_` one node without capturing it.

use std::collections::BTreeMap;

use ast_grep_config::Fixer;
use ast_grep_core::Language as _;
use ast_grep_core::tree_sitter::{LanguageExt, StrDoc};
use ast_grep_core::{AstGrep, Pattern};
use ast_grep_language::SupportLang;

use super::lang::Lang;
use super::scan::range_of;

/// One match of a pattern. Lines and columns are 1-based (columns count
/// characters); byte offsets are 0-based, end exclusive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub start_byte: usize,
    pub end_byte: usize,
    /// The matched text.
    pub text: String,
    /// Single meta-variables (`$VAR`, without the `$`) and their texts.
    pub vars: BTreeMap<String, String>,
    /// Multi meta-variables (`$$$ARGS`, without the `$$$`) and each
    /// matched node's text (separators such as commas left out).
    pub multi_vars: BTreeMap<String, Vec<String>>,
}

/// Replace bytes `start_byte..end_byte` with `replacement`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextEdit {
    pub start_byte: usize,
    pub end_byte: usize,
    pub replacement: String,
    /// The 1-based line the replaced text starts on (for reports).
    pub line: u32,
}

/// Every match of `pattern` in `source`, in order. An invalid pattern (one
/// that does not parse as `lang` code) is an error naming it.
pub fn search(pattern: &str, lang: Lang, source: &str) -> Result<Vec<Match>, String> {
    Ok(Searcher::new(pattern, lang)?.find(source))
}

/// The edits that replace every match of `pattern` with `template`, whose
/// meta-variables are filled from the match (`$A`, `$$$ARGS`). Apply them
/// with [`apply_edits`].
pub fn rewrite(
    pattern: &str,
    template: &str,
    lang: Lang,
    source: &str,
) -> Result<Vec<TextEdit>, String> {
    Ok(Rewriter::new(pattern, template, lang)?.edits(source))
}

/// A pattern compiled for one language, with the words a file must contain
/// to match it; shared by [`Searcher`] and [`Rewriter`].
struct Compiled {
    pattern: Pattern,
    lang: Lang,
    words: Vec<String>,
}

impl Compiled {
    fn new(pattern: &str, lang: Lang) -> Result<Compiled, String> {
        Ok(Compiled {
            pattern: compile(pattern, lang)?,
            lang,
            words: literal_words(pattern),
        })
    }

    /// The parsed `source`, or `None` when it lacks one of the words and
    /// so cannot match (not parsed at all).
    fn parse(&self, source: &str) -> Option<AstGrep<StrDoc<SupportLang>>> {
        contains_all(source, &self.words)
            .then(|| self.lang.0.ast_grep(super::scan::as_parsed(source)))
    }
}

/// A pattern compiled once for one language, to run over many files.
pub struct Searcher {
    compiled: Compiled,
    names: Vec<(String, bool)>,
}

impl Searcher {
    /// An invalid pattern (one that does not parse as `lang` code) is an
    /// error naming it.
    pub fn new(pattern: &str, lang: Lang) -> Result<Searcher, String> {
        Ok(Searcher {
            compiled: Compiled::new(pattern, lang)?,
            names: meta_variable_names(pattern),
        })
    }

    /// Every match in `source`, in order.
    pub fn find(&self, source: &str) -> Vec<Match> {
        let Some(root) = self.compiled.parse(source) else {
            return Vec::new();
        };
        root.root()
            .find_all(&self.compiled.pattern)
            .map(|found| {
                let node = found.get_node();
                let (line, column, end_line, end_column) = range_of(node);
                let env = found.get_env();
                let mut vars = BTreeMap::new();
                let mut multi_vars = BTreeMap::new();
                for (name, multi) in &self.names {
                    if *multi {
                        let nodes = env.get_multiple_matches(name);
                        let texts: Vec<String> = nodes
                            .iter()
                            .filter(|n| n.is_named())
                            .map(|n| n.text().into_owned())
                            .collect();
                        multi_vars.insert(name.clone(), texts);
                    } else if let Some(node) = env.get_match(name) {
                        vars.insert(name.clone(), node.text().into_owned());
                    }
                }
                let range = node.range();
                Match {
                    line,
                    column,
                    end_line,
                    end_column,
                    start_byte: range.start,
                    end_byte: range.end,
                    text: node.text().into_owned(),
                    vars,
                    multi_vars,
                }
            })
            .collect()
    }
}

/// A pattern and its replacement compiled once for one language.
pub struct Rewriter {
    compiled: Compiled,
    fixer: Fixer,
}

impl Rewriter {
    pub fn new(pattern: &str, template: &str, lang: Lang) -> Result<Rewriter, String> {
        let compiled = Compiled::new(pattern, lang)?;
        // A Fixer (not the bare template) keeps what the pattern did not
        // cover, such as a statement's trailing `;`.
        let fixer = Fixer::from_str(template, &lang.0)
            .map_err(|error| format!("invalid replacement {template:?}: {error}"))?;
        Ok(Rewriter { compiled, fixer })
    }

    /// The edits for every match in `source`.
    pub fn edits(&self, source: &str) -> Vec<TextEdit> {
        let Some(root) = self.compiled.parse(source) else {
            return Vec::new();
        };
        let line_end = line_end_of(source);
        root.root()
            .find_all(&self.compiled.pattern)
            .map(|found| {
                let (line, _, _, _) = range_of(found.get_node());
                let edit = found.make_edit(&self.compiled.pattern, &self.fixer);
                TextEdit {
                    start_byte: edit.position,
                    end_byte: edit.position + edit.deleted_length,
                    replacement: with_line_end(
                        &String::from_utf8_lossy(&edit.inserted_text),
                        line_end,
                    ),
                    line,
                }
            })
            .collect()
    }
}

/// The line end `source` uses (its first one): `\r\n`, a lone `\r`, or
/// `\n`.
fn line_end_of(source: &str) -> &'static str {
    match source.find(['\r', '\n']) {
        Some(at) if source[at..].starts_with("\r\n") => "\r\n",
        Some(at) if source[at..].starts_with('\r') => "\r",
        _ => "\n",
    }
}

/// `text` with each of its line breaks written as `line_end`: a
/// replacement of several lines takes the file's line ends (re-attack
/// RD-8: `\n` was written into CRLF and lone-CR files).
fn with_line_end(text: &str, line_end: &str) -> String {
    if !text.contains(['\r', '\n']) {
        return text.to_string();
    }
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .replace('\n', line_end)
}

/// `source` with non-overlapping `edits` applied (in any order given; an
/// edit overlapping an earlier one is dropped).
pub fn apply_edits(source: &str, edits: &[TextEdit]) -> String {
    let mut sorted: Vec<&TextEdit> = edits.iter().collect();
    sorted.sort_by_key(|edit| (edit.start_byte, edit.end_byte));
    let mut out = String::with_capacity(source.len());
    let mut at = 0;
    for edit in sorted {
        if edit.start_byte < at || edit.end_byte > source.len() {
            continue;
        }
        out.push_str(&source[at..edit.start_byte]);
        out.push_str(&edit.replacement);
        at = edit.end_byte;
    }
    out.push_str(&source[at..]);
    out
}

/// Where `source` first fails to parse as `lang` (1-based line and column
/// of the first error or missing node), or `None` when it parses cleanly.
/// `ralph-hooks fix` (issue 13) leaves such a file alone and refuses a fix
/// that would break one.
pub fn syntax_error(lang: Lang, source: &str) -> Option<(u32, u32)> {
    let root = lang.0.ast_grep(super::scan::as_parsed(source));
    let node = root
        .root()
        .dfs()
        .find(|node| node.is_error() || node.is_missing())?;
    let (line, column, _, _) = range_of(&node);
    Some((line, column))
}

fn compile(pattern: &str, lang: Lang) -> Result<Pattern, String> {
    // tree-sitter parses anything, wrapping what it cannot place in ERROR
    // nodes (or inventing MISSING tokens); such a pattern would match
    // nothing and be reported as "0 matches", so it is refused here.
    if let Some((line, column)) = pattern_syntax_error(pattern, lang) {
        return Err(format!(
            "the {lang} pattern {pattern:?} does not parse (syntax error at line {line}, column {column}): write it as {lang} code, with $VAR for a node and $$$ARGS for a list"
        ));
    }
    Pattern::try_new(pattern, lang.0)
        .map_err(|error| format!("invalid {lang} pattern {pattern:?}: {error}"))
}

/// Where the pattern, parsed as `lang` code (meta-variables as ast-grep
/// reads them), first has an ERROR or MISSING node: 1-based line and
/// column.
/// A missing `;` is not an error: patterns are fragments (`$A.unwrap()`
/// in Rust, `var $A = $B` in TypeScript) that ast-grep matches without it.
fn pattern_syntax_error(pattern: &str, lang: Lang) -> Option<(u32, u32)> {
    let root = lang.0.ast_grep(lang.0.pre_process_pattern(pattern));
    let node = root
        .root()
        .dfs()
        .find(|node| node.is_error() || (node.is_missing() && node.kind() != ";"))?;
    let (line, column, _, _) = range_of(&node);
    Some((line, column))
}

/// The words of a pattern outside its meta-variables (`console`, `log` in
/// `console.log($MSG)`). A match's leaves other than meta-variables have
/// the pattern's text exactly, so a file lacking one of these words cannot
/// match and is not parsed at all: most files of a project, for most
/// searches.
fn literal_words(pattern: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let bytes = pattern.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !is_word(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_word(bytes[i]) {
            i += 1;
        }
        let after_dollar = start > 0 && bytes[start - 1] == b'$';
        let word = &pattern[start..i];
        if !after_dollar && word.len() >= 2 && !words.iter().any(|w| w == word) {
            words.push(word.to_string());
        }
    }
    words
}

fn contains_all(source: &str, words: &[String]) -> bool {
    words.iter().all(|word| source.contains(word.as_str()))
}

/// The meta-variables a pattern names: (name, is multi). `$_`/`$$$` alone
/// capture nothing.
fn meta_variable_names(pattern: &str) -> Vec<(String, bool)> {
    let bytes = pattern.as_bytes();
    let mut names: Vec<(String, bool)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        let multi = pattern[i..].starts_with("$$$");
        i += if multi { 3 } else { 1 };
        let start = i;
        while i < bytes.len()
            && (bytes[i].is_ascii_uppercase() || bytes[i].is_ascii_digit() || bytes[i] == b'_')
        {
            i += 1;
        }
        let name = &pattern[start..i];
        if !name.is_empty() && !name.starts_with('_') && !names.iter().any(|(n, _)| n == name) {
            names.push((name.to_string(), multi));
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py() -> Lang {
        "python".parse().unwrap()
    }

    #[test]
    fn a_replacement_of_several_lines_takes_the_files_line_ends() {
        for (source, end) in [
            ("def f():\r\n    x = foo(1)\r\n", "\r\n"),
            ("def f():\r    x = foo(1)\r", "\r"),
            ("def f():\n    x = foo(1)\n", "\n"),
        ] {
            let edits = rewrite("x = foo($A)", "x = $A\ny = $A", py(), source).unwrap();
            assert_eq!(
                edits[0].replacement,
                format!("x = 1{end}    y = 1"),
                "{source:?}"
            );
        }
    }

    #[test]
    fn lone_carriage_returns_are_line_ends_for_syntax_and_search() {
        // Engine attack E-15: `fix` refused this valid file as a syntax
        // error at 1:17.
        let yaml = "import yaml\rs = \"x\"\rv = yaml.load(s)\r";
        assert_eq!(syntax_error(py(), yaml), None);
        let found = search("yaml.load($X)", py(), yaml).unwrap();
        assert_eq!((found[0].line, found[0].column), (3, 5));
    }

    #[test]
    fn a_pattern_that_does_not_parse_is_an_error_naming_where() {
        let error = search("print($A", py(), "print(1)\n").unwrap_err();
        assert!(error.contains("does not parse"), "{error}");
        assert!(error.contains("line 1"), "{error}");
        let error = rewrite("print($A", "log($A)", py(), "print(1)\n").unwrap_err();
        assert!(error.contains("does not parse"), "{error}");
    }

    #[test]
    fn usual_patterns_of_each_language_still_parse() {
        for (lang, pattern) in [
            ("python", "print($A)"),
            ("python", "def $F($$$ARGS): $$$BODY"),
            ("python", "import $M"),
            ("python", "$A == None"),
            ("javascript", "console.log($$$ARGS)"),
            ("javascript", "debugger;"),
            ("typescript", "const $A = $B"),
            ("typescript", "var $A = $B"),
            ("tsx", "<$T $$$PROPS />"),
            ("rust", "$A.unwrap()"),
            ("rust", "println!($$$A)"),
            ("go", "fmt.Println($$$A)"),
            ("c", "printf($$$A)"),
        ] {
            let lang: Lang = lang.parse().unwrap();
            assert_eq!(
                pattern_syntax_error(pattern, lang),
                None,
                "{lang} {pattern}"
            );
        }
    }

    #[test]
    fn search_captures_single_and_multi_variables() {
        let source = "x = 1\nprint(a, b + 1)\nfoo(z)\nprint()\n";
        let found = search("print($$$ARGS)", py(), source).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].line, found[0].column), (2, 1));
        assert_eq!(found[0].text, "print(a, b + 1)");
        assert_eq!(found[0].multi_vars["ARGS"], vec!["a", "b + 1"]);
        assert!(found[1].multi_vars["ARGS"].is_empty());

        let found = search("foo($X)", py(), source).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].vars["X"], "z");
        assert_eq!((found[0].end_line, found[0].end_column), (3, 7));
    }

    #[test]
    fn rewrite_fills_the_template() {
        let lang: Lang = "typescript".parse().unwrap();
        let source = "var a = 1;\nlet b = 2;\nvar c = f(a);\n";
        let edits = rewrite("var $A = $B", "const $A = $B", lang, source).unwrap();
        assert_eq!(edits.len(), 2);
        assert_eq!(edits[1].line, 3);
        assert_eq!(
            apply_edits(source, &edits),
            "const a = 1;\nlet b = 2;\nconst c = f(a);\n"
        );
    }

    #[test]
    fn syntax_errors_are_located() {
        assert_eq!(syntax_error(py(), "def f():\n    return 1\n"), None);
        assert!(syntax_error(py(), "x = 1\ndef f(:\n").is_some_and(|(line, _)| line == 2));
    }

    #[test]
    fn literal_words_skip_meta_variables() {
        assert_eq!(
            literal_words("console.log($MSG, $$$REST, $_)"),
            vec!["console".to_string(), "log".to_string()]
        );
        assert_eq!(literal_words("$A + $B"), Vec::<String>::new());
        assert_eq!(literal_words("f(x, 'ab cd')"), vec!["ab", "cd"]);
        // A file without a word is not parsed, and still finds nothing;
        // one with the words is searched as before.
        let lang: Lang = "javascript".parse().unwrap();
        let searcher = Searcher::new("console.log($MSG)", lang).unwrap();
        assert!(searcher.find("logger.debug(x)\n").is_empty());
        assert_eq!(searcher.find("console.log(x)\n").len(), 1);
        let rewriter = Rewriter::new("console.log($MSG)", "logger.debug($MSG)", lang).unwrap();
        assert!(rewriter.edits("print(x)\n").is_empty());
        assert_eq!(rewriter.edits("console.log(x);\n").len(), 1);
    }

    #[test]
    fn meta_variable_names_are_found() {
        assert_eq!(
            meta_variable_names("$F($A, $$$REST, $_, $$$)"),
            vec![
                ("F".into(), false),
                ("A".into(), false),
                ("REST".into(), true)
            ]
        );
    }

    #[test]
    fn overlapping_edits_are_dropped() {
        let edit = |s, e, r: &str| TextEdit {
            start_byte: s,
            end_byte: e,
            replacement: r.into(),
            line: 1,
        };
        assert_eq!(
            apply_edits(
                "abcdef",
                &[edit(3, 4, "X"), edit(0, 2, "Y"), edit(1, 3, "Z")]
            ),
            "YcXef"
        );
    }
}

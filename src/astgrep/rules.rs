//! The rule set: built-in rules shipped in the binary plus the project's
//! own `sgconfig.yml` rules (its `ruleDirs`), which win on id clashes.
//!
//! Loading never fails and never panics: an unreadable or invalid rule file,
//! or a rule for a language this binary does not parse, is one line in
//! [`RuleSet::problems`], and every other rule still runs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ast_grep_config::{
    GlobalRules, RuleCollection, RuleConfig, SerializableRuleConfig, from_multiple,
};
use ast_grep_language::SupportLang;

use super::lang::Lang;
use crate::util::fsread::{self, Links, limits};
use crate::util::text::fnv1a;

/// The built-in rules: (file name, YAML). Each file is one rule for one
/// language; an id may span languages (`no-eval` for Python and JS/TS).
const BUILTIN: &[(&str, &str)] = &[
    (
        "sql-injection-risk.yml",
        include_str!("rules/sql-injection-risk.yml"),
    ),
    (
        "convert-var-to-const-javascript.yml",
        include_str!("rules/convert-var-to-const-javascript.yml"),
    ),
    (
        "convert-var-to-const-typescript.yml",
        include_str!("rules/convert-var-to-const-typescript.yml"),
    ),
    (
        "convert-var-to-const-tsx.yml",
        include_str!("rules/convert-var-to-const-tsx.yml"),
    ),
    (
        "no-debugger-javascript.yml",
        include_str!("rules/no-debugger-javascript.yml"),
    ),
    (
        "no-debugger-typescript.yml",
        include_str!("rules/no-debugger-typescript.yml"),
    ),
    (
        "no-debugger-tsx.yml",
        include_str!("rules/no-debugger-tsx.yml"),
    ),
    (
        "no-eval-javascript.yml",
        include_str!("rules/no-eval-javascript.yml"),
    ),
    (
        "no-eval-typescript.yml",
        include_str!("rules/no-eval-typescript.yml"),
    ),
    ("no-eval-tsx.yml", include_str!("rules/no-eval-tsx.yml")),
    (
        "no-eval-python.yml",
        include_str!("rules/no-eval-python.yml"),
    ),
    (
        "subprocess-shell-true.yml",
        include_str!("rules/subprocess-shell-true.yml"),
    ),
    (
        "yaml-unsafe-load.yml",
        include_str!("rules/yaml-unsafe-load.yml"),
    ),
    (
        "mutable-default-argument.yml",
        include_str!("rules/mutable-default-argument.yml"),
    ),
];

/// What to load besides the project's own rules.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Include the built-in rules (`check.ast_grep.builtin`, default true).
    pub builtin: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { builtin: true }
    }
}

/// Compiled rules, ready to scan files.
pub struct RuleSet {
    pub(crate) collection: RuleCollection<SupportLang>,
    ids: BTreeSet<String>,
    problems: Vec<String>,
    not_applicable: Vec<String>,
    /// The folder the project's rule globs (`files`, `ignores`) are relative to.
    pub(crate) base: Option<PathBuf>,
    /// Identifies the rules' text: findings kept for a file stay valid
    /// while it and this are unchanged.
    fingerprint: u64,
}

impl RuleSet {
    /// The built-in rules alone.
    pub fn builtin() -> RuleSet {
        let mut problems = Vec::new();
        let rules = builtin_rules(&mut problems);
        RuleSet::from_rules(rules, problems, None)
    }

    /// The rules for a project: built-in ones (unless turned off) plus the
    /// project's `sgconfig.yml` rules, which replace built-in rules of the
    /// same id.
    pub fn load(project_root: &Path, options: &LoadOptions) -> RuleSet {
        let mut problems = Vec::new();
        let mut digest = format!("builtin={}\n", options.builtin).into_bytes();
        let project = project_rules(project_root, &mut problems, &mut digest);
        let project_ids: BTreeSet<String> = project.iter().map(|r| r.id.clone()).collect();
        let mut rules = Vec::new();
        if options.builtin {
            rules.extend(
                builtin_rules(&mut problems)
                    .into_iter()
                    .filter(|rule| !project_ids.contains(&rule.id)),
            );
        }
        rules.extend(project);
        let mut set = RuleSet::from_rules(rules, problems, Some(project_root.to_path_buf()));
        set.fingerprint = fnv1a(&digest);
        set
    }

    /// Identifies the rules' text (see the field).
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Rules from YAML text (one or more `---`-separated rules), for tests
    /// and callers with their own rules. Errors name the first bad rule.
    pub fn from_yaml(yaml: &str) -> Result<RuleSet, String> {
        let mut problems = Vec::new();
        let rules = parse_rules(yaml, "<yaml>", &mut problems);
        if let Some(problem) = problems.first() {
            return Err(problem.clone());
        }
        Ok(RuleSet::from_rules(rules, problems, None))
    }

    fn from_rules(
        rules: Vec<RuleConfig<SupportLang>>,
        mut problems: Vec<String>,
        base: Option<PathBuf>,
    ) -> RuleSet {
        let ids = rules.iter().map(|r| r.id.clone()).collect();
        let collection = match RuleCollection::try_new(rules) {
            Ok(collection) => collection,
            Err(error) => {
                problems.push(format!("ast-grep rules: bad files/ignores glob: {error}"));
                RuleCollection::try_new(Vec::new()).expect("an empty rule collection builds")
            }
        };
        let (not_applicable, problems) = problems
            .into_iter()
            .partition(|problem| problem.ends_with(UNSUPPORTED));
        RuleSet {
            collection,
            ids,
            problems,
            not_applicable,
            base,
            fingerprint: 0,
        }
    }

    /// Every rule id in the set.
    pub fn rule_ids(&self) -> &BTreeSet<String> {
        &self.ids
    }

    /// One line per rule file or rule that could not be used, for files
    /// this engine checks: what makes a check inconclusive.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Rules for a language this engine does not parse (Ruby, Java, …):
    /// they apply to no file it checks, so they are not problems of a
    /// check (re-attack RE-6: a polyglot repository's shared rules made
    /// every check exit 2).
    pub fn not_applicable(&self) -> &[String] {
        &self.not_applicable
    }

    /// Whether any rule applies to files of this language.
    pub fn covers(&self, path: &Path) -> bool {
        !self.collection.for_path(path).is_empty()
    }
}

fn builtin_rules(problems: &mut Vec<String>) -> Vec<RuleConfig<SupportLang>> {
    BUILTIN
        .iter()
        .flat_map(|(name, yaml)| parse_rules(yaml, &format!("built-in {name}"), problems))
        .collect()
}

/// Parses and compiles the rules in one YAML text. A language not compiled
/// into this binary is reported, not compiled (the parser crate would panic).
/// How a rule for a language this engine does not parse is reported.
const UNSUPPORTED: &str = " is not supported by ralph-hooks' ast-grep engine";

fn parse_rules(
    yaml: &str,
    origin: &str,
    problems: &mut Vec<String>,
) -> Vec<RuleConfig<SupportLang>> {
    let documents = match from_multiple::<SerializableRuleConfig<SupportLang>>(yaml) {
        Ok(documents) => documents,
        Err(error) => {
            problems.push(format!(
                "{origin}: not a valid ast-grep rule: {}",
                one_line(&error.to_string())
            ));
            return Vec::new();
        }
    };
    let globals = GlobalRules::default();
    let mut rules = Vec::new();
    for document in documents {
        let id = document.id.clone();
        if Lang::compiled(document.language).is_none() {
            problems.push(format!(
                "{origin}: rule {id}: language {}{UNSUPPORTED}",
                document.language
            ));
            continue;
        }
        match RuleConfig::try_from(document, &globals) {
            Ok(rule) => rules.push(rule),
            Err(error) => problems.push(format!(
                "{origin}: rule {id}: {}",
                one_line(&error.to_string())
            )),
        }
    }
    rules
}

/// The project's rules: every `.yml`/`.yaml` under the `ruleDirs` its
/// `sgconfig.yml` names. No sgconfig, no rules.
/// The project's rules; `digest` gets the text of every file read.
fn project_rules(
    project_root: &Path,
    problems: &mut Vec<String>,
    digest: &mut Vec<u8>,
) -> Vec<RuleConfig<SupportLang>> {
    let Some(config) = config_file(project_root) else {
        return Vec::new();
    };
    let text = match fsread::read_text(&config, limits::CONFIG, Links::Follow) {
        Ok(Some(text)) => text,
        Ok(None) => return Vec::new(),
        Err(error) => {
            problems.push(error.to_string());
            return Vec::new();
        }
    };
    digest.extend_from_slice(text.as_bytes());
    // An empty file is an sgconfig.yml without rule folders.
    let parsed = if text.trim().is_empty() {
        Ok(SgConfig::default())
    } else {
        serde_saphyr::from_str::<SgConfig>(&text)
    };
    let dirs = match parsed {
        Ok(config) => config.rule_dirs,
        Err(error) => {
            problems.push(format!(
                "{}: not valid YAML: {}",
                config.display(),
                one_line(&error.to_string())
            ));
            return Vec::new();
        }
    };
    let mut files = Vec::new();
    for dir in dirs {
        let dir = project_root.join(dir);
        if !dir.is_dir() {
            problems.push(format!(
                "{}: rule folder {} does not exist",
                config.display(),
                dir.display()
            ));
            continue;
        }
        yaml_files(&dir, &mut files);
    }
    files.sort();
    let mut rules = Vec::new();
    for file in files {
        let origin = file
            .strip_prefix(project_root)
            .unwrap_or(&file)
            .display()
            .to_string();
        match fsread::read_text(&file, limits::CONFIG, Links::Follow) {
            Ok(Some(yaml)) => {
                digest.extend_from_slice(origin.as_bytes());
                digest.extend_from_slice(yaml.as_bytes());
                rules.extend(parse_rules(&yaml, &origin, problems));
            }
            Ok(None) => {}
            Err(error) => problems.push(format!("{origin}: cannot read: {}", error.reason())),
        }
    }
    rules
}

/// The project's ast-grep config, if any.
pub fn config_file(project_root: &Path) -> Option<PathBuf> {
    ["sgconfig.yml", "sgconfig.yaml"]
        .iter()
        .map(|name| project_root.join(name))
        .find(|path| path.is_file())
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yml" || e == "yaml") {
            out.push(path);
        }
    }
}

/// What we read of `sgconfig.yml`: the folders of the project's rules
/// (every other key is ast-grep's business and left alone).
#[derive(Debug, Default, serde::Deserialize)]
struct SgConfig {
    #[serde(default, rename = "ruleDirs")]
    rule_dirs: Vec<String>,
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::astgrep::Level;

    /// The built-in rule ids found in `source` as the file `name`.
    fn hits(name: &str, source: &str) -> Vec<(String, u32)> {
        RuleSet::builtin()
            .scan_source(Path::new(name), source)
            .into_iter()
            .map(|f| (f.rule_id, f.line))
            .collect()
    }

    fn ids(name: &str, source: &str) -> Vec<String> {
        hits(name, source).into_iter().map(|(id, _)| id).collect()
    }

    #[test]
    fn builtin_rules_all_compile() {
        let rules = RuleSet::builtin();
        assert_eq!(rules.problems(), &[] as &[String]);
        for id in [
            "sql-injection-risk",
            "convert-var-to-const",
            "no-debugger",
            "no-eval",
            "subprocess-shell-true",
            "yaml-unsafe-load",
            "mutable-default-argument",
        ] {
            assert!(rules.rule_ids().contains(id), "{id}");
        }
    }

    #[test]
    fn sql_injection_risk() {
        let positive = "def q(cur, uid, name):\n    cur.execute(f\"SELECT * FROM u WHERE id = {uid}\")\n    cur.execute(\"SELECT * FROM u WHERE n = '\" + name + \"'\")\n    cur.execute(\"SELECT * FROM u WHERE id = %s\" % uid)\n    cur.execute(\"SELECT * FROM u WHERE id = {}\".format(uid))\n";
        assert_eq!(
            hits("q.py", positive),
            (2..=5)
                .map(|l| ("sql-injection-risk".to_string(), l))
                .collect::<Vec<_>>()
        );
        let finding = &RuleSet::builtin().scan_source(Path::new("q.py"), positive)[0];
        assert_eq!(finding.severity, Level::Error);
        assert!(finding.message.contains("execute()"), "{}", finding.message);
        assert!(finding.note.as_deref().unwrap().contains("%s"));
        let negative = "def q(cur, uid):\n    cur.execute(\"SELECT * FROM u WHERE id = %s\", (uid,))\n    cur.execute(\"SELECT 1\")\n    log(f\"user {uid}\")\n";
        assert!(ids("q.py", negative).is_empty());
    }

    #[test]
    fn convert_var_to_const_with_fix() {
        for name in ["a.js", "a.ts", "a.tsx"] {
            let found = RuleSet::builtin().scan_source(Path::new(name), "let a = 1;\nvar b = 2;\n");
            assert_eq!(found.len(), 1, "{name}");
            assert_eq!(found[0].rule_id, "convert-var-to-const");
            assert_eq!(found[0].severity, Level::Warning);
            assert_eq!((found[0].line, found[0].column), (2, 1));
            // The fix keeps the statement's `;` (it once dropped it).
            assert_eq!(found[0].fix.as_ref().unwrap().replacement, "const b = 2;");
            let bare = RuleSet::builtin().scan_source(Path::new(name), "var c = f(1)\n");
            assert_eq!(bare[0].fix.as_ref().unwrap().replacement, "const c = f(1)");
            assert!(ids(name, "const a = 1;\nlet b = 2;\n").is_empty(), "{name}");
            // Several declarators: all of them become const, none is lost.
            let several = RuleSet::builtin().scan_source(Path::new(name), "var x = 1, y = 2;\n");
            assert_eq!(
                several[0].fix.as_ref().unwrap().replacement,
                "const x = 1, y = 2;"
            );
            // No value: nothing to make const.
            assert!(ids(name, "var z;\n").is_empty(), "{name}");
        }
    }

    #[test]
    fn no_debugger() {
        assert_eq!(
            ids("a.ts", "function f() {\n  debugger;\n}\n"),
            vec!["no-debugger"]
        );
        assert!(ids("a.ts", "const debuggerOn = true;\n").is_empty());
    }

    #[test]
    fn no_eval() {
        assert_eq!(ids("a.js", "eval(input);\n"), vec!["no-eval"]);
        assert!(ids("a.js", "JSON.parse(input);\nobj.eval(x);\n").is_empty());
        assert_eq!(
            ids("a.py", "eval(text)\nexec(code)\n"),
            vec!["no-eval", "no-eval"]
        );
        assert!(ids("a.py", "import ast\nast.literal_eval(text)\nevaluate(x)\n").is_empty());
    }

    #[test]
    fn subprocess_shell_true() {
        assert_eq!(
            ids(
                "a.py",
                "import subprocess\nsubprocess.run(f\"ls {p}\", shell=True)\n"
            ),
            vec!["subprocess-shell-true"]
        );
        assert!(ids("a.py", "import subprocess\nsubprocess.run([\"ls\", p])\nsubprocess.run(\"ls\", shell=False)\n").is_empty());
    }

    #[test]
    fn yaml_unsafe_load_with_fix() {
        let found = RuleSet::builtin()
            .scan_source(Path::new("a.py"), "import yaml\ndata = yaml.load(text)\n");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].rule_id, "yaml-unsafe-load");
        assert_eq!(
            found[0].fix.as_ref().unwrap().replacement,
            "yaml.safe_load(text)"
        );
        assert!(
            ids(
                "a.py",
                "yaml.safe_load(text)\nyaml.load(text, Loader=yaml.SafeLoader)\n"
            )
            .is_empty()
        );
    }

    #[test]
    fn mutable_default_argument() {
        assert_eq!(
            ids(
                "a.py",
                "def f(items=[]):\n    pass\ndef g(m: dict = {}):\n    pass\n"
            ),
            vec!["mutable-default-argument", "mutable-default-argument"]
        );
        assert!(ids("a.py", "def f(items=None, n=0, t=()):\n    pass\n").is_empty());
    }

    #[test]
    fn sgconfig_variants_are_read_or_reported() {
        let dir = std::env::temp_dir().join(format!("ralph-sgconfig-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("rules")).unwrap();
        std::fs::write(
            dir.join("rules/no-print.yml"),
            "id: no-print\nlanguage: python\nseverity: info\nmessage: no print\nrule:\n  pattern: print($$$A)\n",
        )
        .unwrap();
        let load = |config: &str| {
            std::fs::write(dir.join("sgconfig.yml"), config).unwrap();
            let rules = RuleSet::load(&dir, &LoadOptions::default());
            let found = rules
                .scan_source(&dir.join("m.py"), "print(1)\n")
                .iter()
                .any(|f| f.rule_id == "no-print");
            (found, rules.problems().to_vec())
        };
        // Other keys of ast-grep's are left alone.
        assert_eq!(
            load("ruleDirs:\n  - rules\nutilDirs: [utils]\ntestConfigs:\n  - testDir: t\n"),
            (true, vec![])
        );
        assert_eq!(load("ruleDirs: [rules]\n"), (true, vec![]));
        assert_eq!(load(""), (false, vec![]));
        assert_eq!(load("utilDirs: [u]\n"), (false, vec![]));
        let (found, problems) = load("ruleDirs: [rules\n");
        assert!(!found);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("sgconfig.yml: not valid YAML"),
            "{problems:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn project_rules_win_on_id_clashes_and_broken_files_are_reported_once() {
        let dir = std::env::temp_dir().join(format!("ralph-astgrep-rules-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("rules")).unwrap();
        std::fs::write(dir.join("sgconfig.yml"), "ruleDirs:\n  - rules\n").unwrap();
        std::fs::write(
            dir.join("rules/no-print.yml"),
            "id: no-print\nlanguage: python\nseverity: info\nmessage: no print\nrule:\n  pattern: print($$$A)\n",
        )
        .unwrap();
        // Same id as a built-in rule: the project's version replaces ours.
        std::fs::write(
            dir.join("rules/eval.yml"),
            "id: no-eval\nlanguage: python\nseverity: error\nmessage: project eval\nrule:\n  pattern: eval($X)\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("rules/broken.yml"),
            "id: broken\nlanguage: python\nrule: [unclosed\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("rules/java.yml"),
            "id: java-rule\nlanguage: java\nrule:\n  pattern: foo()\n",
        )
        .unwrap();

        let rules = RuleSet::load(&dir, &LoadOptions::default());
        assert_eq!(rules.problems().len(), 1, "{:?}", rules.problems());
        assert!(
            rules.problems()[0].contains("broken.yml"),
            "{:?}",
            rules.problems()
        );
        // A language this engine does not parse is not a problem of a check.
        assert_eq!(rules.not_applicable().len(), 1);
        assert!(rules.not_applicable()[0].contains("java"));
        let found = rules.scan_source(&dir.join("m.py"), "print(1)\neval(x)\nexec(y)\n");
        let got: Vec<(&str, &str)> = found
            .iter()
            .map(|f| (f.rule_id.as_str(), f.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![("no-print", "no print"), ("no-eval", "project eval")]
        );

        let only_project = RuleSet::load(&dir, &LoadOptions { builtin: false });
        assert!(!only_project.rule_ids().contains("sql-injection-risk"));
        assert!(only_project.rule_ids().contains("no-print"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn scan_files_keeps_order_and_reports_unreadable_files() {
        let dir = std::env::temp_dir().join(format!("ralph-astgrep-scan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut files = Vec::new();
        for i in 0..20 {
            let path = dir.join(format!("f{i}.js"));
            std::fs::write(
                &path,
                if i % 2 == 0 {
                    "var a = 1;\n"
                } else {
                    "const a = 1;\n"
                },
            )
            .unwrap();
            files.push(path);
        }
        files.push(dir.join("missing.js"));
        let scans = RuleSet::builtin().scan_files(&files);
        assert_eq!(scans.len(), 21);
        for (i, scan) in scans.iter().take(20).enumerate() {
            assert_eq!(scan.path, files[i]);
            assert_eq!(scan.findings.len(), if i % 2 == 0 { 1 } else { 0 });
        }
        assert!(
            scans[20]
                .skipped
                .as_deref()
                .unwrap()
                .contains("no longer exists")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

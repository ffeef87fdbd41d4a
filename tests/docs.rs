//! The documentation holds: every relative link and anchor in `README.md`,
//! `CHANGELOG.md` and `docs/` resolves (anchors by GitHub's rules), no link
//! leaves the repository, no tracker numbers or specification documents a
//! reader does not have, the README fits one screen, the README's quick
//! start runs as written, and `docs/cli.md` is what the grammar renders.
//!
//! Whatever Markdown files are there are checked, so a page added later is
//! held to the same rules without touching this file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use crate::util::{TempDir, bin, test_state_home};

const README_MAX_LINES: usize = 150;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, CHANGELOG.md and every `.md` under `docs/`, relative to the repository.
fn pages() -> Vec<PathBuf> {
    let root = repo();
    let mut pages = vec![PathBuf::from("README.md")];
    if root.join("CHANGELOG.md").exists() {
        pages.push(PathBuf::from("CHANGELOG.md"));
    }
    let mut stack = vec![root.join("docs")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                pages.push(path.strip_prefix(&root).unwrap().to_path_buf());
            }
        }
    }
    pages.sort();
    pages
}

fn read(page: &Path) -> String {
    std::fs::read_to_string(repo().join(page))
        .unwrap_or_else(|error| panic!("reading {}: {error}", page.display()))
}

/// Each line with whether it is inside a fenced code block (fences count as inside).
fn lines_with_fences(text: &str) -> Vec<(usize, &str, bool)> {
    let mut fence: Option<String> = None;
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|c| *c == '`' || *c == '~')
            .collect();
        let is_fence =
            marker.len() >= 3 && marker.chars().all(|c| c == marker.as_bytes()[0] as char);
        match &fence {
            Some(open)
                if is_fence
                    && marker.starts_with(open.as_str())
                    && trimmed[marker.len()..].trim().is_empty() =>
            {
                out.push((index + 1, line, true));
                fence = None;
            }
            Some(_) => out.push((index + 1, line, true)),
            None if is_fence => {
                out.push((index + 1, line, true));
                fence = Some(marker);
            }
            None => out.push((index + 1, line, false)),
        }
    }
    out
}

/// Each line outside fenced code with its line number, inline code spans
/// blanked out: spans may run over lines within a paragraph, as on GitHub.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut paragraph: Vec<(usize, &str)> = Vec::new();
    let flush = |paragraph: &mut Vec<(usize, &str)>, out: &mut Vec<(usize, String)>| {
        if paragraph.is_empty() {
            return;
        }
        let joined: Vec<&str> = paragraph.iter().map(|(_, line)| *line).collect();
        let blanked = without_code_spans(&joined.join("\n"));
        for ((number, _), line) in paragraph.iter().zip(blanked.split('\n')) {
            out.push((*number, line.to_string()));
        }
        paragraph.clear();
    };
    for (number, line, in_code) in lines_with_fences(text) {
        if in_code || line.trim().is_empty() {
            flush(&mut paragraph, &mut out);
        } else {
            paragraph.push((number, line));
        }
    }
    flush(&mut paragraph, &mut out);
    out
}

/// The text with every inline code span blanked out (line breaks kept).
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '`' {
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            // The closing run of the same length.
            let mut j = i + run;
            let mut closed = None;
            while j < chars.len() {
                if chars[j] == '`' {
                    let other = chars[j..].iter().take_while(|c| **c == '`').count();
                    if other == run {
                        closed = Some(j + other);
                        break;
                    }
                    j += other;
                } else {
                    j += 1;
                }
            }
            match closed {
                Some(end) => {
                    out.extend(
                        chars[i..end]
                            .iter()
                            .map(|c| if *c == '\n' { '\n' } else { ' ' }),
                    );
                    i = end;
                }
                None => {
                    out.extend(&chars[i..i + run]);
                    i += run;
                }
            }
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// Link targets on one line of prose: `[text](target)`, `![alt](target)`,
/// `[label]: target`, and `<scheme://…>` autolinks.
fn link_targets(prose: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = prose;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let target = after[..end].trim();
        let target = target.split_whitespace().next().unwrap_or("");
        let target = target.trim_start_matches('<').trim_end_matches('>');
        targets.push(target.to_string());
        rest = &after[end.min(after.len())..];
    }
    let trimmed = prose.trim_start();
    if trimmed.starts_with('[')
        && let Some(close) = trimmed.find("]:")
    {
        let target = trimmed[close + 2..].split_whitespace().next().unwrap_or("");
        targets.push(target.to_string());
    }
    let mut rest = prose;
    while let Some(at) = rest.find('<') {
        let after = &rest[at + 1..];
        let end = after.find('>').unwrap_or(after.len());
        if after[..end].contains("://") {
            targets.push(after[..end].to_string());
        }
        rest = &after[end.min(after.len())..];
    }
    targets
}

/// GitHub's anchor for a heading: the rendered text lower-cased, every
/// character but letters, digits, `_`, `-` and blanks dropped, blanks to `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    // Links keep their text: `[text](url)` → `text`.
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](") else {
            break;
        };
        let Some(close) = rest[open + mid..].find(')') else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..open + mid]);
        rest = &rest[open + mid + close + 1..];
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a page offers: its headings (duplicates numbered as GitHub
/// numbers them) and explicit `<a id="…">` / `<a name="…">`.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for (_, line, in_code) in lines_with_fences(text) {
        if in_code {
            continue;
        }
        let trimmed = line.trim_start();
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            let base = slug(trimmed[hashes..].trim().trim_end_matches('#').trim());
            let count = seen.entry(base.clone()).or_insert(0);
            let anchor = if *count == 0 {
                base.clone()
            } else {
                format!("{base}-{count}")
            };
            *count += 1;
            anchors.insert(anchor);
        }
        for key in ["id=\"", "name=\""] {
            let mut rest = line;
            while let Some(at) = rest.find(key) {
                let after = &rest[at + key.len()..];
                let end = after.find('"').unwrap_or(after.len());
                anchors.insert(after[..end].to_string());
                rest = &after[end..];
            }
        }
    }
    anchors
}

/// `a/./b/../c` → `a/c`; `None` when it climbs out of the repository.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
            _ => return None,
        }
    }
    Some(out)
}

#[test]
fn every_link_and_anchor_resolves_and_none_leaves_the_repository() {
    let root = repo();
    let mut problems = Vec::new();
    for page in pages() {
        let text = read(&page);
        let own_anchors = anchors(&text);
        for (number, prose) in prose_lines(&text) {
            let at = format!("{}:{number}", page.display());
            for target in link_targets(&prose) {
                if target.contains("://")
                    || target.starts_with("mailto:")
                    || target.starts_with("//")
                {
                    problems.push(format!("{at}: a link leaves the repository: {target}"));
                    continue;
                }
                let (file, anchor) = match target.split_once('#') {
                    Some((file, anchor)) => (file, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let (resolved, anchors_there) = if file.is_empty() {
                    (page.clone(), Some(own_anchors.clone()))
                } else {
                    let joined = page.parent().unwrap_or(Path::new("")).join(file);
                    let Some(resolved) = normalize(&joined) else {
                        problems.push(format!("{at}: {target} points outside the repository"));
                        continue;
                    };
                    if !root.join(&resolved).exists() {
                        problems.push(format!(
                            "{at}: {target}: no such file ({})",
                            resolved.display()
                        ));
                        continue;
                    }
                    let anchors_there = (resolved.extension().is_some_and(|ext| ext == "md")
                        && root.join(&resolved).is_file())
                    .then(|| anchors(&read(&resolved)));
                    (resolved, anchors_there)
                };
                let Some(anchor) = anchor else { continue };
                match anchors_there {
                    Some(anchors_there) => {
                        if !anchors_there.contains(anchor) {
                            problems.push(format!(
                                "{at}: #{anchor} is not a heading of {}",
                                resolved.display()
                            ));
                        }
                    }
                    None => {
                        let line_anchor = anchor.strip_prefix('L').is_some_and(|n| {
                            !n.is_empty()
                                && n.chars()
                                    .all(|c| c.is_ascii_digit() || c == '-' || c == 'L')
                        });
                        if !line_anchor {
                            problems.push(format!(
                                "{at}: #{anchor} on {}, which has no headings",
                                resolved.display()
                            ));
                        }
                    }
                }
            }
            for scheme in ["http://", "https://"] {
                if prose.contains(scheme)
                    && !link_targets(&prose).iter().any(|t| t.starts_with(scheme))
                {
                    problems.push(format!("{at}: a bare {scheme} address in prose becomes a link out of the repository"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "broken or outside links:\n{}",
        problems.join("\n")
    );
}

/// Whether `text` cites a tracker item (`issue 12`, `issues 21–27`) or a
/// document a reader does not have (`../shared`, a specification's `seed
/// 002`, `§`).
fn citations(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut found = Vec::new();
    for needle in ["../shared", "shared/reference", "§"] {
        if lower.contains(needle) {
            found.push(needle.to_string());
        }
    }
    for word in ["issue ", "issues ", "issue #", "seed ", "seeds ", "pr #"] {
        let mut rest = lower.as_str();
        while let Some(at) = rest.find(word) {
            let before_ok = at == 0 || !rest[..at].ends_with(|c: char| c.is_alphanumeric());
            let after = &rest[at + word.len()..];
            // A specification's seeds are numbered 000, 001, …: "seed 42" is a random seed.
            let cites = if word.starts_with("seed") {
                after.starts_with('0') && after.chars().take(3).all(|c| c.is_ascii_digit())
            } else {
                after
                    .trim_start_matches('#')
                    .starts_with(|c: char| c.is_ascii_digit())
            };
            if before_ok && cites {
                found.push(format!(
                    "{word}{}",
                    after.chars().take(6).collect::<String>()
                ));
            }
            rest = after;
        }
    }
    found
}

/// `#12` in prose: a tracker number (code, where `#1` may be a row of
/// output, is left out by the caller).
fn hash_numbers(prose: &str) -> Vec<String> {
    let mut found = Vec::new();
    let chars: Vec<char> = prose.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        let before_ok =
            i == 0 || chars[i - 1].is_whitespace() || matches!(chars[i - 1], '(' | '[' | ',');
        if *c == '#' && before_ok && chars.get(i + 1).is_some_and(|n| n.is_ascii_digit()) {
            found.push(chars[i..(i + 6).min(chars.len())].iter().collect());
        }
    }
    found
}

#[test]
fn no_tracker_numbers_and_no_documents_the_reader_does_not_have() {
    let mut problems = Vec::new();
    for page in pages() {
        let text = read(&page);
        for (number, line, _) in lines_with_fences(&text) {
            for citation in citations(line) {
                problems.push(format!("{}:{number}: {citation:?}", page.display()));
            }
        }
        for (number, prose) in prose_lines(&text) {
            for citation in hash_numbers(&prose) {
                problems.push(format!("{}:{number}: {citation:?}", page.display()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "citations a reader cannot follow:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_citation_check_finds_what_it_looks_for() {
    assert!(!citations("see issue 12 for why").is_empty());
    assert!(!citations("issues 21–27 merged").is_empty());
    assert!(!hash_numbers("fixed in #31").is_empty());
    assert!(!citations("seed 004 says").is_empty());
    assert!(!citations("in ../shared/reference").is_empty());
    assert!(citations("issue a command; #[derive] and C# 12; proptest seed 42").is_empty());
    assert!(hash_numbers("#[derive] and C# 12 and the #L10 anchor").is_empty());
}

#[test]
fn the_anchor_rules_are_githubs() {
    assert_eq!(
        slug("How a loop ends: budgets, the block cap"),
        "how-a-loop-ends-budgets-the-block-cap"
    );
    assert_eq!(slug("`ralph-hooks check`"), "ralph-hooks-check");
    assert_eq!(
        slug("Warm language servers (daemon)"),
        "warm-language-servers-daemon"
    );
    assert_eq!(
        slug("The pipeline: `/ralph` = plan → run → sync"),
        "the-pipeline-ralph--plan--run--sync"
    );
    assert_eq!(slug("Link [here](x.md) too"), "link-here-too");
    let text = "# A\n## A\n```\n# not a heading\n```\n## B <a id=\"custom\"></a>\n";
    let found = anchors(text);
    assert!(found.contains("a") && found.contains("a-1") && found.contains("custom"));
    assert!(!found.contains("not-a-heading"));
}

#[test]
fn code_spans_are_not_prose_even_over_two_lines() {
    let text = "a `x\nhttp://y` b [l](z.md)\n\n```\n[no](w.md)\n```\n";
    let prose = prose_lines(text);
    assert_eq!(prose.len(), 2);
    assert!(!prose[1].1.contains("http"));
    assert_eq!(link_targets(&prose[1].1), vec!["z.md".to_string()]);
}

#[test]
fn the_readme_fits_one_screen() {
    let lines = read(Path::new("README.md")).lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, at most {README_MAX_LINES}"
    );
}

/// The shell lines of the README's quick start: the `sh` blocks under the
/// heading that starts with "A first loop".
fn quick_start() -> Vec<String> {
    let text = read(Path::new("README.md"));
    let mut in_section = false;
    let mut in_block = false;
    let mut commands = Vec::new();
    for (_, line, _) in lines_with_fences(&text) {
        if line.starts_with("## ") {
            in_section = line.starts_with("## A first loop");
            continue;
        }
        if !in_section {
            continue;
        }
        if line.trim_start().starts_with("```") {
            in_block = !in_block && line.trim() == "```sh";
            continue;
        }
        let command = line.trim();
        if in_block && !command.is_empty() && !command.starts_with('#') {
            commands.push(command.to_string());
        }
    }
    commands
}

#[test]
fn every_command_of_the_quick_start_runs() {
    let commands = quick_start();
    assert!(
        commands.len() >= 2,
        "no quick start found in README.md: {commands:?}"
    );
    let project = TempDir::new("docs-quick-start");
    let dir = project.path();
    // A small project of the kind the quick start is for: a test that fails.
    std::fs::create_dir_all(dir.join("app")).unwrap();
    std::fs::write(dir.join("app/__init__.py"), "").unwrap();
    std::fs::write(
        dir.join("app/calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("test_calc.py"),
        "import unittest\nfrom app.calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n",
    )
    .unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status();
    assert!(git.is_ok_and(|status| status.success()), "git init");

    let bin_dir = bin("ralph-hooks").parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for command in &commands {
        // The client itself is started by the reader, not by a test.
        if command.starts_with("claude") {
            continue;
        }
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(command);
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy().to_string();
            if key.starts_with("CLAUDE") || key.starts_with("RALPH_HOOKS") {
                shell.env_remove(key);
            }
        }
        let output = shell
            .env("PATH", &path)
            .env("RALPH_HOOKS_DAEMON", "0")
            .env("XDG_STATE_HOME", test_state_home())
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "quick start command failed: {command}\nstatus {:?}\nstdout:\n{}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let settings = std::fs::read_to_string(dir.join(".claude/settings.json")).unwrap_or_default();
    assert!(
        settings.contains("ralph-stop-loop-controller"),
        "the quick start did not register the hooks"
    );
    let loop_state =
        std::fs::read_to_string(dir.join(".claude/orchestrator/loop.json")).unwrap_or_default();
    assert!(
        loop_state.contains("RUNNING"),
        "the quick start did not start a loop: {loop_state}"
    );
}

#[test]
fn the_readme_states_the_rust_version_cargo_enforces() {
    let version = env!("CARGO_PKG_RUST_VERSION");
    assert!(!version.is_empty(), "Cargo.toml has no rust-version");
    let readme = read(Path::new("README.md"));
    let stated = format!("Rust {version} or newer");
    assert!(
        readme.contains(&stated),
        "README.md does not say {stated:?} (Cargo.toml's rust-version)"
    );
}

#[test]
fn cli_reference_is_current() {
    let path = repo().join("docs/cli.md");
    let rendered = ralph_hooks::cli::reference::markdown();
    if std::env::var_os("RALPH_HOOKS_BLESS").is_some_and(|value| value == "1") {
        std::fs::write(&path, &rendered).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == rendered,
        "docs/cli.md is not what the command line's help renders; regenerate it:\n  \
         RALPH_HOOKS_BLESS=1 cargo test --test integration docs::cli_reference_is_current"
    );
}

//! Package publishes seen after the fact. A registry upload leaves nothing
//! in the project, so what is looked at is the command's own output (the
//! Bash tool's `stdout` and `stderr`), for the lines each tool prints on
//! success:
//!
//! | tool | line |
//! | --- | --- |
//! | npm (also through npx, pnpm) | `npm notice Publishing to <registry>` and `+ <name>@<version>` |
//! | pnpm | `+ <name>@<version>` after `npm notice` lines |
//! | yarn 2+ | `Package archive published` |
//! | yarn 1 | `success Published.` |
//! | cargo | `Uploaded <crate> v<version> to registry` / `Published <crate> v<version> at registry` |
//!
//! A publish whose output was thrown away (`> /dev/null`) or that printed
//! something else is not seen.
//!
//! Pure: the output in, what was published out.

/// Each publish the output shows, described in a few words.
pub fn detect(stdout: &str, stderr: &str) -> Vec<String> {
    let mut found = Vec::new();
    for text in [stdout, stderr] {
        let npm_publishing = text
            .lines()
            .any(|line| line.trim_start().starts_with("npm notice Publishing to"));
        let npm_notices = text.lines().any(|line| line.starts_with("npm notice"));
        for line in text.lines() {
            let line = line.trim();
            if let Some(package) = line.strip_prefix("+ ")
                && (npm_publishing || npm_notices)
                && looks_like_package(package)
            {
                found.push(format!("npm package {package}"));
            }
            if line.ends_with("Package archive published") {
                found.push("a package (yarn npm publish)".into());
            }
            if line == "success Published." {
                found.push("a package (yarn publish)".into());
            }
            for verb in ["Uploaded ", "Published "] {
                if let Some(rest) = line.strip_prefix(verb)
                    && (rest.contains(" to registry") || rest.contains(" at registry"))
                {
                    let crate_name: Vec<&str> = rest.split_whitespace().take(2).collect();
                    found.push(format!("crate {}", crate_name.join(" ")));
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// `name@1.2.3` or `@scope/name@1.2.3`.
fn looks_like_package(text: &str) -> bool {
    let Some((name, version)) = text.rsplit_once('@') else {
        return false;
    };
    !name.is_empty()
        && !name.contains(char::is_whitespace)
        && version.starts_with(|c: char| c.is_ascii_digit())
        && version.contains('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_uploads_are_seen() {
        let npm = "npm notice\nnpm notice 📦  demo@1.0.3\nnpm notice Publishing to https://registry.npmjs.org/ with tag latest and default access\n+ demo@1.0.3\n";
        assert_eq!(detect(npm, ""), vec!["npm package demo@1.0.3"]);
        let cargo = "    Packaging demo v0.2.0\n   Uploading demo v0.2.0\n    Uploaded demo v0.2.0 to registry `crates-io`\n   Published demo v0.2.0 at registry `crates-io`\n";
        assert_eq!(detect("", cargo), vec!["crate demo v0.2.0"]);
        assert_eq!(
            detect("➤ YN0000: Package archive published\n", ""),
            vec!["a package (yarn npm publish)"]
        );
        assert_eq!(
            detect("success Published.\n", ""),
            vec!["a package (yarn publish)"]
        );
    }

    #[test]
    fn ordinary_output_is_not_a_publish() {
        assert!(detect("+ lodash@4.17.21\nadded 1 package in 2s\n", "").is_empty());
        assert!(detect("Uploaded the report\ncargo build finished\n", "").is_empty());
        assert!(detect("Published docs to the wiki", "").is_empty());
    }
}

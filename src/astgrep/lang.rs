//! Languages the engine can parse: the ast-grep languages whose tree-sitter
//! grammar this binary compiles in (see the `ast-grep-language` features in
//! Cargo.toml). Any other language is unknown here, never a panic inside the
//! parser crate.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use ast_grep_language::SupportLang;

/// A language the engine can parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lang(pub(crate) SupportLang);

/// The grammars compiled in (keep in step with Cargo.toml's features).
const COMPILED: &[SupportLang] = &[
    SupportLang::Python,
    SupportLang::JavaScript,
    SupportLang::TypeScript,
    SupportLang::Tsx,
    SupportLang::Rust,
    SupportLang::Go,
    SupportLang::C,
    SupportLang::Cpp,
    SupportLang::Bash,
];

impl Lang {
    /// Every language the engine parses.
    pub fn all() -> impl Iterator<Item = Lang> {
        COMPILED.iter().map(|lang| Lang(*lang))
    }

    /// The language of a file, from its extension (`.py`, `.ts`, `.tsx`,
    /// `.js`/`.jsx`/`.mjs`/`.cjs`, `.rs`, `.go`, `.c`/`.h`, `.cpp`/`.hpp`...,
    /// `.sh`/`.bash`).
    pub fn from_path(path: &Path) -> Option<Lang> {
        let lang = <SupportLang as ast_grep_core::Language>::from_path(path)?;
        Lang::compiled(lang)
    }

    /// The compiled-in language, if `lang` is one.
    pub(crate) fn compiled(lang: SupportLang) -> Option<Lang> {
        COMPILED.contains(&lang).then_some(Lang(lang))
    }

    /// The language's name as ast-grep spells it in rules (`python`,
    /// `typescript`, `tsx`, ...).
    pub fn name(&self) -> String {
        self.0.to_string().to_lowercase()
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Lang {
    type Err = String;

    /// A language by name or alias (`python`/`py`, `typescript`/`ts`,
    /// `tsx`, `javascript`/`js`, `rust`/`rs`, `go`, `c`, `cpp`, `bash`).
    fn from_str(name: &str) -> Result<Lang, String> {
        let lang: SupportLang = name
            .parse()
            .map_err(|_| format!("unknown language: {name}"))?;
        Lang::compiled(lang).ok_or_else(|| {
            format!("language {name} is not compiled into ralph-hooks' ast-grep engine")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_come_from_extensions() {
        let name = |p: &str| Lang::from_path(Path::new(p)).map(|l| l.name());
        assert_eq!(name("a/b.py").as_deref(), Some("python"));
        assert_eq!(name("x.ts").as_deref(), Some("typescript"));
        assert_eq!(name("x.tsx").as_deref(), Some("tsx"));
        assert_eq!(name("x.mjs").as_deref(), Some("javascript"));
        assert_eq!(name("x.rs").as_deref(), Some("rust"));
        assert_eq!(name("README.md"), None);
        // Compiled out: a Java file is unknown, not a panic.
        assert_eq!(name("A.java"), None);
    }

    #[test]
    fn names_parse_back() {
        for lang in Lang::all() {
            assert_eq!(lang.name().parse::<Lang>(), Ok(lang));
        }
        assert_eq!("py".parse::<Lang>().map(|l| l.name()), Ok("python".into()));
        assert!("java".parse::<Lang>().is_err());
        assert!("klingon".parse::<Lang>().is_err());
    }
}

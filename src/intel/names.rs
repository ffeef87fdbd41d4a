//! Whether a new name given to `rename` can be a name in the file's
//! language: an identifier by the language's own rule (Unicode XID for
//! Python and Rust, ID plus `$` for JavaScript and TypeScript, letters for
//! Go, ASCII for C and C++), and not one of its reserved words. A server
//! may accept `../x` or `class` and write code that no longer parses.

use std::path::Path;

/// The language families whose naming rules differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Python,
    Script,
    Rust,
    Go,
    C,
    Cpp,
    /// Any other file: an XID identifier, no reserved words known.
    Other,
}

fn family(path: &Path) -> Family {
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "py" | "pyi" | "pyw" => Family::Python,
        "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" => Family::Script,
        "rs" => Family::Rust,
        "go" => Family::Go,
        "c" | "h" => Family::C,
        "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "tpp" => Family::Cpp,
        _ => Family::Other,
    }
}

const PYTHON: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

const SCRIPT: &[&str] = &[
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

const RUST: &[&str] = &[
    "Self", "abstract", "as", "async", "await", "become", "box", "break", "const", "continue",
    "crate", "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if",
    "impl", "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub",
    "ref", "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "unsafe", "unsized", "use", "virtual", "where", "while", "yield", "_",
];

const GO: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "fallthrough",
    "for",
    "func",
    "go",
    "goto",
    "if",
    "import",
    "interface",
    "map",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "type",
    "var",
];

const C: &[&str] = &[
    "_Alignas",
    "_Alignof",
    "_Atomic",
    "_Bool",
    "_Complex",
    "_Generic",
    "_Imaginary",
    "_Noreturn",
    "_Static_assert",
    "_Thread_local",
    "alignas",
    "alignof",
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "const",
    "constexpr",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "false",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "nullptr",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "struct",
    "switch",
    "thread_local",
    "true",
    "typedef",
    "typeof",
    "typeof_unqual",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
];

const CPP_ONLY: &[&str] = &[
    "and",
    "and_eq",
    "asm",
    "bitand",
    "bitor",
    "catch",
    "char16_t",
    "char32_t",
    "char8_t",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "compl",
    "concept",
    "consteval",
    "constinit",
    "const_cast",
    "decltype",
    "delete",
    "dynamic_cast",
    "explicit",
    "export",
    "friend",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "reinterpret_cast",
    "requires",
    "static_cast",
    "template",
    "this",
    "throw",
    "try",
    "typeid",
    "typename",
    "using",
    "virtual",
    "wchar_t",
    "xor",
    "xor_eq",
];

/// `Err` with the reason when `name` cannot be a name in `path`'s language.
pub fn check(path: &Path, name: &str) -> Result<(), String> {
    let family = family(path);
    let language = match family {
        Family::Python => "Python",
        Family::Script => "JavaScript/TypeScript",
        Family::Rust => "Rust",
        Family::Go => "Go",
        Family::C => "C",
        Family::Cpp => "C++",
        Family::Other => "this language",
    };
    // Rust's raw identifiers (`r#type`) may use a reserved word.
    let (raw, bare) = match (family, name.strip_prefix("r#")) {
        (Family::Rust, Some(bare)) => (true, bare),
        _ => (false, name),
    };
    if !is_identifier(family, bare) {
        return Err(format!(
            "{name:?} is not an identifier in {language}; nothing renamed"
        ));
    }
    let reserved: &[&[&str]] = match family {
        Family::Python => &[PYTHON],
        Family::Script => &[SCRIPT],
        Family::Rust if raw => &[],
        Family::Rust => &[RUST],
        Family::Go => &[GO],
        Family::C => &[C],
        Family::Cpp => &[C, CPP_ONLY],
        Family::Other => &[],
    };
    if reserved.iter().any(|words| words.contains(&bare)) {
        return Err(format!(
            "{name:?} is a reserved word in {language}; nothing renamed"
        ));
    }
    Ok(())
}

/// Whether a character may start (or continue) an identifier.
type CharTest = fn(char) -> bool;

fn is_identifier(family: Family, name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let (start, rest): (CharTest, CharTest) = match family {
        Family::Python | Family::Rust | Family::Other => (
            |c| c == '_' || unicode_ident::is_xid_start(c),
            unicode_ident::is_xid_continue,
        ),
        Family::Script => (
            |c| c == '_' || c == '$' || unicode_ident::is_xid_start(c),
            |c| c == '$' || c == '\u{200C}' || c == '\u{200D}' || unicode_ident::is_xid_continue(c),
        ),
        Family::Go => (
            |c| c == '_' || c.is_alphabetic(),
            |c| c == '_' || c.is_alphanumeric(),
        ),
        Family::C | Family::Cpp => (
            |c| c == '_' || c.is_ascii_alphabetic(),
            |c| c == '_' || c.is_ascii_alphanumeric(),
        ),
    };
    start(first) && chars.all(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(file: &str, name: &str) -> bool {
        check(Path::new(file), name).is_ok()
    }

    #[test]
    fn identifiers_pass_and_paths_numbers_and_keywords_do_not() {
        for (file, name) in [
            ("a.py", "helper"),
            ("a.py", "_private2"),
            ("a.py", "größe"),
            ("a.py", "match"),
            ("a.ts", "$el"),
            ("a.js", "_x1"),
            ("a.rs", "r#type"),
            ("a.rs", "snake_case"),
            ("a.go", "Ünicode"),
            ("a.c", "buffer_len"),
            ("a.cpp", "Widget"),
        ] {
            assert!(ok(file, name), "{file}: {name:?} should pass");
        }
        for (file, name) in [
            ("a.py", "../x"),
            ("a.py", "1abc"),
            ("a.py", "class"),
            ("a.py", "None"),
            ("a.py", "a-b"),
            ("a.py", "a.b"),
            ("a.py", ""),
            ("a.ts", "function"),
            ("a.ts", "a b"),
            ("a.rs", "fn"),
            ("a.rs", "r#"),
            ("a.go", "func"),
            ("a.c", "int"),
            ("a.c", "größe"),
            ("a.cpp", "class"),
            ("a.txt", "../x"),
        ] {
            assert!(!ok(file, name), "{file}: {name:?} should be refused");
        }
        assert!(
            check(Path::new("a.py"), "class")
                .unwrap_err()
                .contains("reserved word in Python")
        );
    }
}

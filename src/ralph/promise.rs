//! Does the assistant's last message give the loop's promise?
//!
//! Strict on purpose: `<promise>TEXT</promise>` must be the final text of the
//! message (trailing whitespace aside), outside any code block or inline code,
//! and TEXT must equal the promise after whitespace normalisation. A promise
//! that is only quoted — "I will print <promise>DONE</promise> when…", or in a
//! code sample — does not end a loop.

const OPEN: &str = "<promise>";
const CLOSE: &str = "</promise>";

/// Collapses every run of whitespace to one space and trims the ends.
pub fn normalize_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// True when `message` ends with the promise `promise`.
pub fn is_given(message: &str, promise: &str) -> bool {
    final_promise(message).is_some_and(|given| given == normalize_whitespace(promise))
}

/// The normalised text of the promise that ends `message`, if one does.
pub fn final_promise(message: &str) -> Option<String> {
    let body = message.trim_end();
    let before_close = body.strip_suffix(CLOSE)?;
    let open_at = before_close.rfind(OPEN)?;
    let inner = &before_close[open_at + OPEN.len()..];
    if inner.contains(CLOSE) {
        return None;
    }
    let prefix = &before_close[..open_at];
    if inside_code(prefix) {
        return None;
    }
    Some(normalize_whitespace(inner))
}

/// Whether text following `prefix` sits inside a fenced code block or an
/// inline code span left open on its line.
fn inside_code(prefix: &str) -> bool {
    let fences = prefix.lines().filter(|line| {
        let line = line.trim_start();
        line.starts_with("```") || line.starts_with("~~~")
    });
    if fences.count() % 2 == 1 {
        return true;
    }
    let current_line = prefix.rsplit('\n').next().unwrap_or("");
    current_line.matches('`').count() % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_a_final_promise() {
        assert!(is_given(
            "All tests pass.\n\n<promise>DONE</promise>",
            "DONE"
        ));
        assert!(is_given(
            "<promise>  all   green\n</promise>\n",
            "all green"
        ));
        assert!(is_given("Done. <promise>DONE</promise>", "DONE"));
    }

    #[test]
    fn rejects_quoted_or_early_promises() {
        assert!(!is_given(
            "I will print <promise>DONE</promise> when finished.",
            "DONE"
        ));
        assert!(!is_given(
            "<promise>DONE</promise>\nbut tests still fail",
            "DONE"
        ));
        assert!(!is_given("```\n<promise>DONE</promise>", "DONE"));
        assert!(!is_given("```\n<promise>DONE</promise>\n```", "DONE"));
        assert!(!is_given("Say `<promise>DONE</promise>", "DONE"));
        assert!(!is_given("<promise>DONE!</promise>", "DONE"));
        assert!(!is_given("<promise>NOT DONE</promise>", "DONE"));
        assert!(!is_given("", "DONE"));
    }

    #[test]
    fn a_closed_code_block_before_the_promise_is_fine() {
        assert!(is_given(
            "```rust\nfn main() {}\n```\n<promise>DONE</promise>",
            "DONE"
        ));
    }
}

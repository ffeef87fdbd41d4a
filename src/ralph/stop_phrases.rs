//! Does a user's prompt ask the loop to stop? (issue 12)
//!
//! The most common complaint about loop tools is that the user says "stop"
//! and the loop goes on (prior art: /goal #77105, OMC #1299, OmO #89). Stop
//! does not fire on Esc, so the prompt the user submits is the one place to
//! hear them. A prompt is a stop request when, case-insensitively, it *is* a
//! stop phrase, or *starts* with one followed by a clause break ("stop —
//! that's wrong", "Stop! I need to look"); a few filler words around it are
//! allowed ("please stop", "stop the loop now"). It never matches inside an
//! ordinary sentence: "don't stop until the tests pass" and "stop using
//! tabs" are instructions, not requests to stop.
//!
//! Korean phrases take their verb endings ("그만해", "중단해 주세요").
//!
//! Pure: the phrases come from the `control` section of
//! `.claude/ralph-hooks.json` (`stop_phrases`, replacing the defaults; `[]`
//! turns pausing off).

use serde::Deserialize;

/// The default stop phrases.
pub const DEFAULT_STOP_PHRASES: &[&str] = &[
    "stop",
    "cancel",
    "pause",
    "halt",
    "enough",
    "that's enough",
    "stop the loop",
    "/cancel-loop",
    "멈춰",
    "중단",
    "그만",
];

/// Words that may come before a phrase without making it a sentence.
const LEADING_FILLERS: &[&str] = &["please", "ok", "okay", "hey", "no", "wait"];

/// Words that may follow a phrase without making it a sentence, stripped
/// from the end repeatedly ("stop the loop please now").
const TRAILING_FILLERS: &[&str] = &[
    "please",
    "now",
    "right now",
    "for now",
    "it",
    "this",
    "that",
    "here",
    "the loop",
    "the task",
    "everything",
    "immediately",
    "주세요",
    "해주세요",
    "해 주세요",
    "해줘",
    "해",
    "하세요",
    "좀",
    "제발",
];

/// Verb endings a Korean phrase may carry inside its own word.
const KOREAN_ENDINGS: &[&str] = &[
    "",
    "해",
    "해요",
    "해줘",
    "해주세요",
    "하세요",
    "하자",
    "해라",
    "요",
    "!",
];

/// Only the start of a prompt is looked at: a stop request is short, and a
/// pasted file must not cost anything.
const LOOK_AT_CHARS: usize = 200;

/// The `control` section of `.claude/ralph-hooks.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ControlConfig {
    pub stop_phrases: Vec<String>,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            stop_phrases: DEFAULT_STOP_PHRASES.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// Whether `prompt` asks to stop, given the phrases.
pub fn is_stop_request(prompt: &str, phrases: &[String]) -> bool {
    let text = normalize(prompt);
    if text.is_empty() {
        return false;
    }
    let text = strip_leading_fillers(&text);
    phrases
        .iter()
        .map(|phrase| normalize(phrase))
        .filter(|phrase| !phrase.is_empty())
        .any(|phrase| matches_phrase(&text, &phrase))
}

/// Lower case, typographic apostrophes made plain, runs of spaces made one,
/// at most [`LOOK_AT_CHARS`] characters.
fn normalize(text: &str) -> String {
    let head: String = text
        .trim()
        .chars()
        .take(LOOK_AT_CHARS)
        .map(|c| match c {
            '\u{2019}' | '\u{2018}' | '`' => '\'',
            c => c,
        })
        .collect::<String>()
        .to_lowercase();
    let mut out = String::with_capacity(head.len());
    let mut space = false;
    for c in head.chars() {
        if c == ' ' || c == '\t' {
            space = true;
            continue;
        }
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    out
}

fn strip_leading_fillers(text: &str) -> String {
    let mut rest = text;
    loop {
        let before = rest;
        for filler in LEADING_FILLERS {
            if let Some(after) = rest.strip_prefix(filler)
                && let Some(after) = after
                    .strip_prefix(|c: char| c == ' ' || c == ',')
                    .map(|a| a.trim_start_matches([' ', ',']))
            {
                rest = after;
            }
        }
        if rest == before {
            return rest.to_string();
        }
    }
}

/// A clause break: what may follow a phrase at the start of a longer prompt.
fn is_break(c: char) -> bool {
    matches!(
        c,
        '.' | '!' | '?' | ',' | ';' | ':' | '\n' | '\r' | '—' | '–' | '-' | '…' | '~' | '('
    )
}

/// Whether `rest` (what follows a phrase, `spaced` when blanks came first)
/// starts with a clause break rather than the rest of a word. A full stop,
/// comma, colon, hyphen or tilde breaks the clause only when a blank, the
/// end or another break follows it ("stop. I'll look" but not "stop.sh
/// fails", "stop-loss orders"); an opening parenthesis only after a blank
/// ("stop (I need to look)" but not the call "stop()").
fn starts_with_break(rest: &str, spaced: bool) -> bool {
    let mut chars = rest.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    if !is_break(first) {
        return false;
    }
    match first {
        '.' | ',' | ':' | '-' | '~' => chars
            .next()
            .is_none_or(|next| next.is_whitespace() || is_break(next)),
        '(' => spaced,
        _ => true,
    }
}

fn matches_phrase(text: &str, phrase: &str) -> bool {
    let Some(rest) = text.strip_prefix(phrase) else {
        return false;
    };
    let rest = if phrase.chars().last().is_some_and(is_hangul) {
        // The phrase's own word may go on with a verb ending.
        let word_end = rest
            .find(|c: char| c.is_whitespace() || (is_break(c) && c != '!'))
            .unwrap_or(rest.len());
        if !KOREAN_ENDINGS.contains(&&rest[..word_end]) {
            return false;
        }
        &rest[word_end..]
    } else {
        // "stopwatch" is not "stop".
        if rest.starts_with(|c: char| c.is_alphanumeric() || c == '\'') {
            return false;
        }
        rest
    };
    ends_the_request(rest)
}

/// What follows the phrase: nothing, fillers, or fillers then a clause break.
fn ends_the_request(rest: &str) -> bool {
    let mut spaced = rest.starts_with(' ');
    let mut rest = rest.trim_start_matches(' ');
    loop {
        if starts_with_break(rest, spaced) {
            return true;
        }
        let Some(after) = TRAILING_FILLERS.iter().find_map(|filler| {
            rest.strip_prefix(filler)
                .filter(|after| !after.starts_with(|c: char| c.is_alphanumeric()))
        }) else {
            return false;
        };
        spaced = after.starts_with(' ');
        rest = after.trim_start_matches(' ');
    }
}

fn is_hangul(c: char) -> bool {
    ('\u{AC00}'..='\u{D7A3}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop(prompt: &str) -> bool {
        is_stop_request(prompt, &ControlConfig::default().stop_phrases)
    }

    #[test]
    fn whole_messages_and_starts_are_stop_requests() {
        for prompt in [
            "stop",
            "STOP",
            "  Stop.  ",
            "stop!",
            "Stop — that's the wrong file",
            "stop, I need to look at this first",
            "please stop",
            "ok stop now",
            "stop the loop",
            "Stop the loop please",
            "pause",
            "halt!",
            "Cancel",
            "enough",
            "That's enough.",
            "that’s enough",
            "/cancel-loop",
            "stop\nI'll take it from here",
            "stop. I'll take it from here",
            "stop...",
            "stop - wrong file",
            "stop -- wrong file",
            "stop (I need to look)",
            "stop: wrong file",
            "stop, please",
            "cancel.",
            "멈춰",
            "멈춰!",
            "중단",
            "중단해 주세요",
            "그만",
            "그만해",
            "그만해줘",
        ] {
            assert!(stop(prompt), "{prompt:?} should be a stop request");
        }
    }

    #[test]
    fn sentences_that_merely_contain_stop_are_not() {
        for prompt in [
            "don't stop until the tests pass",
            "stop using tabs in the README",
            "Please fix the stop button",
            "the stopwatch test fails",
            "stopping the server is slow",
            "cancellation tokens are leaking",
            "enough tests? add two more",
            "Why did the loop halt yesterday?",
            "그만두고 다른 방법을 써 봐",
            "stop.sh fails",
            "stop.sh fails when run twice",
            "stop-loss orders fail",
            "Stop-loss orders fail on weekends",
            "stop()",
            "stop(1)",
            "stop() is never called",
            "cancel.py raises",
            "pause-button styling is off",
            "halt:8080 refuses connections",
            "stop,go,stop is the sequence",
            "중단점을 설정해",
            "",
            "   ",
            "continue",
        ] {
            assert!(!stop(prompt), "{prompt:?} should not be a stop request");
        }
    }

    #[test]
    fn configured_phrases_replace_the_defaults() {
        let phrases = vec!["hold on".to_string()];
        assert!(is_stop_request("Hold on!", &phrases));
        assert!(!is_stop_request("stop", &phrases));
        assert!(!is_stop_request("stop", &[]));
    }
}

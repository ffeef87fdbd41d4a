//! The stop guard reads chains: one Bash call that finishes the
//! open steps and then completes the task —
//! `ralph-hooks task step complete s2 && ralph-hooks task step complete s3 && ralph-hooks task complete`
//! — must not be denied because the guard looked at the task as it was
//! before the chain ran.
//!
//! The command is split at its top-level operators (`&&`, `||`, `;`,
//! newlines, `|`, `&`). The step actions before each `task complete`
//! (`step complete|skip|start|add`, `steps set|reorder`) are applied, in
//! order, to a copy of the task with the CLI's own functions
//! ([`crate::tasks::steps::apply`]), and `task complete` is judged against
//! the result: allowed when nothing is open by then, denied naming what
//! would still be open.
//!
//! An action counts only when it surely runs before `task complete`: in an
//! earlier `;`/newline list, not backgrounded, reached only through `&&`
//! after other step actions; or earlier in `task complete`'s own `&&` chain
//! (which runs only if they succeeded). Otherwise — after `||`, after a
//! command whose outcome we cannot know, in the same pipeline, in the
//! background — an action that closes steps is not counted and one that can
//! open steps is counted as if it ran: the conservative reading. A
//! `ralph-hooks task` call the guard cannot evaluate (inside `$(…)` or
//! `bash -c`, `task start|cancel`, `--project`) makes the guard judge the
//! task as it is now, as before this change, and say why. The CLI's own
//! refusal stays the last word either way.
//!
//! Pure: a command and a task in, a verdict out.

use super::shell;
use crate::tasks::steps::{self, StepAction};
use crate::tasks::{self, TaskDoc};
use crate::util::text::escape_controls;

/// The operator after a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Pipe,
    /// `;` or a newline.
    Seq,
    /// `&`: the list before it runs in the background.
    Background,
}

/// What one segment of the command does to the task.
#[derive(Debug, Clone)]
enum Effect {
    /// Touches no task step (any other command, or a read-only task call).
    Neutral,
    /// A step action, or the reason the CLI would refuse it.
    Step(Result<StepAction, String>),
    /// `ralph-hooks task complete` for this project.
    Complete { force: bool },
    /// A task call that cannot be evaluated; the text says why.
    Opaque(String),
    /// A `task complete` nested where order cannot be read (`$(…)`,
    /// `bash -c`, a subshell): judged against the task as it is now.
    NestedComplete,
}

struct Segment {
    text: String,
    effect: Effect,
    /// The operator after it (`None` for the last).
    op: Option<Op>,
}

/// A denial: the task as it would be when `task complete` runs, and the
/// reason to give.
#[derive(Debug, Clone)]
pub struct Denial {
    pub doc_after: TaskDoc,
    pub reason: String,
}

/// Judges every un-forced `task complete` of this project in `command`
/// against `doc`; the first that would find steps open is the denial.
pub fn judge(command: &str, doc: &TaskDoc) -> Option<Denial> {
    let segments = segments(command);
    // A call the shell reader finds only across segments (`echo '… task
    // complete' | sh`) has no place in the order: judged as the task is now.
    let unforced_here = |text: &str| {
        shell::task_complete_calls(text)
            .iter()
            .filter(|call| !call.force && call.project.is_none())
            .count()
    };
    let placed: usize = segments.iter().map(|s| unforced_here(&s.text)).sum();
    if placed < unforced_here(command) {
        let message = tasks::stop_guard_message(doc)?;
        return Some(Denial {
            doc_after: doc.clone(),
            reason: format!(
                "{message}\n(The guard judged the task as it is now: a `task complete` runs from a script fed to a shell, where its order cannot be read.)"
            ),
        });
    }
    for (index, segment) in segments.iter().enumerate() {
        match segment.effect {
            Effect::Complete { force: false } => {
                if let Some(denial) = judge_one(&segments, index, doc) {
                    return Some(denial);
                }
            }
            Effect::NestedComplete => {
                if let Some(reason) = tasks::stop_guard_message(doc) {
                    return Some(Denial {
                        doc_after: doc.clone(),
                        reason,
                    });
                }
            }
            _ => {}
        }
    }
    None
}

/// Why an action before `task complete` may not run before it.
fn uncertainty(segments: &[Segment], action: usize, complete: usize) -> Option<&'static str> {
    let list_of = |index: usize| {
        segments[..index]
            .iter()
            .filter(|s| matches!(s.op, Some(Op::Seq | Op::Background)))
            .count()
    };
    let list_end = |index: usize| {
        (index..segments.len())
            .find(|&i| matches!(segments[i].op, Some(Op::Seq | Op::Background) | None))
            .unwrap_or(segments.len() - 1)
    };
    let same_list = list_of(action) == list_of(complete);
    let end = list_end(action);
    if !same_list && segments[end].op == Some(Op::Background) {
        return Some("it runs in the background");
    }
    // The operators between the action's list start (or the action, for
    // the same list) and what must run after it.
    let start = (0..action)
        .rev()
        .find(|&i| matches!(segments[i].op, Some(Op::Seq | Op::Background)))
        .map_or(0, |i| i + 1);
    if same_list {
        // Everything in the list before `task complete` must have succeeded
        // for it to run, unless an `||` offers another way there.
        let between = &segments[start..complete];
        if between.iter().any(|s| s.op == Some(Op::Or)) {
            return Some("the chain has `||`, so it may not have run");
        }
        if segments[action..complete]
            .iter()
            .all(|s| s.op == Some(Op::Pipe))
        {
            return Some("it runs in the same pipeline, at the same time");
        }
        return None;
    }
    for segment in &segments[start..action] {
        match segment.op {
            Some(Op::Or) => return Some("it follows `||`, so it may not run"),
            Some(Op::And) if !matches!(segment.effect, Effect::Step(Ok(_))) => {
                return Some("it runs only if an earlier command succeeds");
            }
            _ => {}
        }
    }
    None
}

fn judge_one(segments: &[Segment], complete: usize, doc: &TaskDoc) -> Option<Denial> {
    let mut simulated = doc.clone();
    let mut counted: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut opaque: Option<String> = None;
    for (index, segment) in segments[..complete].iter().enumerate() {
        match &segment.effect {
            Effect::Neutral | Effect::Complete { .. } => {}
            Effect::NestedComplete => {}
            Effect::Opaque(why) => {
                opaque.get_or_insert_with(|| format!("`{}` {why}", escape_controls(&segment.text)));
            }
            Effect::Step(Err(error)) => notes.push(format!(
                "`{}` would fail ({}), so it changes nothing.",
                escape_controls(&segment.text),
                escape_controls(&error.to_string())
            )),
            Effect::Step(Ok(action)) => {
                let why = uncertainty(segments, index, complete);
                let assume_ran = match why {
                    None => true,
                    Some(_) => action.may_open_steps(),
                };
                if let Some(why) = why {
                    notes.push(format!(
                        "`{}` {} because {why}.",
                        escape_controls(&action.describe()),
                        if assume_ran {
                            "is counted as if it ran (it could open a step)"
                        } else {
                            "is not counted"
                        }
                    ));
                }
                if !assume_ran {
                    continue;
                }
                match steps::apply(&mut simulated, action) {
                    Ok(_) => counted.push(escape_controls(&action.describe()).into_owned()),
                    Err(error) => notes.push(format!(
                        "`{}` would fail ({}), so it changes nothing.",
                        escape_controls(&action.describe()),
                        escape_controls(&format!("{error:#}"))
                    )),
                }
            }
        }
    }
    if let Some(opaque) = opaque {
        // As before chains were read: the task as it is now.
        let message = tasks::stop_guard_message(doc)?;
        return Some(Denial {
            doc_after: doc.clone(),
            reason: format!(
                "{message}\n(The guard judged the task as it is now: it cannot tell what {opaque}.)"
            ),
        });
    }
    let message = tasks::stop_guard_message(&simulated)?;
    if counted.is_empty() && notes.is_empty() {
        return Some(Denial {
            doc_after: simulated,
            reason: message,
        });
    }
    let mut reason = String::new();
    if !counted.is_empty() {
        reason.push_str(&format!(
            "This command runs `task complete` after {}; counting those, the task would still have open steps.\n",
            counted
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    reason.push_str(&message);
    for note in notes {
        reason.push('\n');
        reason.push_str(&note);
    }
    Some(Denial {
        doc_after: simulated,
        reason,
    })
}

fn segments(command: &str) -> Vec<Segment> {
    split(command)
        .into_iter()
        .filter(|(text, _)| !text.trim().is_empty())
        .map(|(text, op)| {
            let text = text.trim().to_string();
            let effect = effect_of(&text);
            Segment { text, effect, op }
        })
        .collect()
}

/// What one segment does, from its simple commands.
fn effect_of(text: &str) -> Effect {
    // The word lexer splits at every `&`; `2>&1` and `&>` are redirections.
    let commands = shell::simple_commands(&text.replace(">&", "> ").replace("&>", " >"));
    let grouped = text.starts_with('(') || text.starts_with('{');
    if commands.len() == 1 && !grouped && !has_substitution(text) {
        return match shell::ralph_hooks_args(&commands[0]) {
            Some(args) => task_effect(args),
            None => Effect::Neutral,
        };
    }
    // Nested: a `task complete` in there is judged as the task is now, a
    // step action makes the chain unreadable, anything else is neutral.
    let mut effect = Effect::Neutral;
    for words in &commands {
        let Some(args) = shell::ralph_hooks_args(words) else {
            continue;
        };
        match task_effect(args) {
            Effect::Complete { force: false } => return Effect::NestedComplete,
            Effect::Step(_) | Effect::Opaque(_) => {
                effect = Effect::Opaque(
                    "runs inside `$(…)`, `sh -c` or a group, where its order cannot be read".into(),
                );
            }
            _ => {}
        }
    }
    effect
}

fn has_substitution(text: &str) -> bool {
    text.contains("$(") || text.contains('`')
}

/// What `ralph-hooks ARGS` does to the task.
fn task_effect(args: &[String]) -> Effect {
    let mut positionals: Vec<String> = Vec::new();
    let mut note = None;
    let mut project = false;
    let mut force = false;
    let mut index = 0;
    let mut flags_end = false;
    while index < args.len() {
        let word = args[index].as_str();
        if flags_end || !word.starts_with('-') || word == "-" {
            positionals.push(word.to_string());
        } else if word == "--" {
            flags_end = true;
        } else if word == "--help" || word == "-h" {
            return Effect::Neutral;
        } else if let Some((name, value)) = word.split_once('=') {
            match name {
                "--note" => note = Some(value.to_string()),
                "--project" => project = true,
                _ => {}
            }
        } else if matches!(word, "--note" | "--project" | "--summary" | "--priority") {
            let value = args.get(index + 1).cloned();
            match word {
                "--note" => note = value,
                "--project" => project = true,
                _ => {}
            }
            index += 1;
        } else if word == "--force" {
            force = true;
        }
        index += 1;
    }
    if positionals.first().map(String::as_str) != Some("task") {
        return Effect::Neutral;
    }
    match positionals.get(1).map(String::as_str) {
        Some("complete") if project => Effect::Neutral,
        Some("complete") => Effect::Complete { force },
        Some("step" | "steps") if project => {
            Effect::Opaque("names another project with --project".into())
        }
        Some("step" | "steps") => {
            let Some(action) = positionals.get(2) else {
                return Effect::Step(Err("no step action given".into()));
            };
            Effect::Step(
                StepAction::parse(action, positionals[3..].to_vec(), note)
                    .map_err(|error| format!("{error:#}")),
            )
        }
        Some("start" | "cancel") => Effect::Opaque("changes which task is active".into()),
        _ => Effect::Neutral,
    }
}

/// The command's top-level segments and the operator after each. Quotes,
/// `$(…)`, backticks and parentheses are kept whole; `2>&1` and `&>` are
/// redirections, not operators.
fn split(text: &str) -> Vec<(String, Option<Op>)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    let mut index = 0;
    let mut at_word_start = true;
    while index < chars.len() {
        let c = chars[index];
        let next = chars.get(index + 1).copied();
        match c {
            '\\' => {
                current.push(c);
                if let Some(next) = next {
                    current.push(next);
                }
                index += 2;
                at_word_start = false;
                continue;
            }
            '\'' | '"' => {
                current.push(c);
                index += 1;
                while index < chars.len() && chars[index] != c {
                    if c == '"' && chars[index] == '\\' && index + 1 < chars.len() {
                        current.push(chars[index]);
                        index += 1;
                    }
                    current.push(chars[index]);
                    index += 1;
                }
                if index < chars.len() {
                    current.push(c);
                }
                index += 1;
                at_word_start = false;
                continue;
            }
            '`' => {
                current.push(c);
                index += 1;
                while index < chars.len() && chars[index] != '`' {
                    current.push(chars[index]);
                    index += 1;
                }
                if index < chars.len() {
                    current.push('`');
                }
                index += 1;
                at_word_start = false;
                continue;
            }
            '#' if at_word_start && depth == 0 => {
                while index < chars.len() && chars[index] != '\n' {
                    index += 1;
                }
                continue;
            }
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 {
            let previous = current.chars().last();
            let op = match (c, next) {
                ('&', Some('&')) => Some((Op::And, 2)),
                ('|', Some('|')) => Some((Op::Or, 2)),
                ('|', Some('&')) => Some((Op::Pipe, 2)),
                ('|', _) if previous != Some('>') => Some((Op::Pipe, 1)),
                (';', Some(';')) => Some((Op::Seq, 2)),
                (';', _) | ('\n', _) => Some((Op::Seq, 1)),
                ('&', _) if !matches!(previous, Some('>' | '<')) && next != Some('>') => {
                    Some((Op::Background, 1))
                }
                _ => None,
            };
            if let Some((op, width)) = op {
                out.push((std::mem::take(&mut current), Some(op)));
                index += width;
                at_word_start = true;
                continue;
            }
        }
        current.push(c);
        at_word_start = c.is_whitespace() || matches!(c, '(' | ')');
        index += 1;
    }
    out.push((current, None));
    // An empty segment (a trailing `;`, a blank line) carries no command:
    // fold its operator into the one before, so `a;\n b` is one `;`.
    let mut folded: Vec<(String, Option<Op>)> = Vec::new();
    for (text, op) in out {
        if text.trim().is_empty() {
            if let Some(last) = folded.last_mut()
                && matches!(last.1, Some(Op::Seq) | None)
            {
                last.1 = op.or(last.1);
            }
            continue;
        }
        folded.push((text, op));
    }
    if let Some(last) = folded.last_mut()
        && last.1 == Some(Op::Seq)
    {
        last.1 = None;
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> TaskDoc {
        let mut doc = TaskDoc::new("task_t");
        let steps: Vec<String> = ["read", "google", "github", "tests"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        steps::set_steps(&mut doc, &steps).unwrap();
        steps::complete_step(&mut doc, "s1", None).unwrap();
        doc
    }

    fn denied(command: &str) -> Option<String> {
        judge(command, &doc()).map(|d| d.reason)
    }

    const RH: &str = "ralph-hooks task";

    #[test]
    fn split_keeps_quotes_and_redirections() {
        let parts: Vec<(String, Option<Op>)> =
            split("a 'x && y' && b 2>&1 | c; d || e &\n f $(g && h)");
        let ops: Vec<Option<Op>> = parts.iter().map(|(_, op)| *op).collect();
        assert_eq!(
            ops,
            vec![
                Some(Op::And),
                Some(Op::Pipe),
                Some(Op::Seq),
                Some(Op::Or),
                Some(Op::Background),
                None
            ]
        );
        assert_eq!(parts[0].0.trim(), "a 'x && y'");
        assert_eq!(parts[5].0.trim(), "f $(g && h)");
    }

    #[test]
    fn all_open_steps_closed_in_an_and_chain_is_allowed() {
        let command = format!(
            "{RH} step complete s2 && {RH} step complete s3 && {RH} step complete s4 && {RH} complete --summary done"
        );
        assert_eq!(denied(&command), None);
    }

    #[test]
    fn one_step_left_open_is_denied_naming_it() {
        let command = format!("{RH} step complete s2 && {RH} step complete s3 && {RH} complete");
        let reason = denied(&command).expect("denied");
        assert!(reason.contains("(s4) tests"), "{reason}");
        assert!(!reason.contains("(s2) google [in"), "{reason}");
        assert!(
            reason.contains("`step complete s2`, `step complete s3`"),
            "{reason}"
        );
    }

    #[test]
    fn skips_in_a_semicolon_chain_count() {
        let command = format!(
            "{RH} step skip s2 --note 'phase 2'; {RH} step complete s3\n{RH} step skip s4; {RH} complete"
        );
        assert_eq!(denied(&command), None);
    }

    #[test]
    fn or_branches_are_not_counted() {
        let command = format!(
            "{RH} step complete s2 && {RH} step complete s3 || {RH} step skip s4 && {RH} complete"
        );
        let reason = denied(&command).expect("denied");
        assert!(reason.contains("`||`"), "{reason}");
        let command = format!(
            "{RH} step complete s2 && {RH} step complete s3 && {RH} step complete s4 || echo failed; {RH} complete"
        );
        // The `||` comes after the steps, in their own list: they ran.
        assert_eq!(denied(&command), None);
        let command = format!(
            "false || {RH} step complete s2; {RH} step complete s3; {RH} step complete s4; {RH} complete"
        );
        let reason = denied(&command).expect("denied");
        assert!(reason.contains("(s2) google"), "{reason}");
    }

    #[test]
    fn other_commands_in_the_chain() {
        let command = format!(
            "cd /p && cargo test && {RH} step complete s2 && {RH} step complete s3 && {RH} step complete s4 && {RH} complete 2>&1 | tail -5"
        );
        assert_eq!(denied(&command), None);
        // A failing test run would skip the steps but not the completion.
        let command = format!(
            "cargo test && {RH} step complete s2 && {RH} step complete s3 && {RH} step complete s4; {RH} complete"
        );
        let reason = denied(&command).expect("denied");
        assert!(
            reason.contains("only if an earlier command succeeds"),
            "{reason}"
        );
    }

    #[test]
    fn quoted_mentions_are_not_commands() {
        let command =
            format!("echo '{RH} step complete s2 && {RH} step complete s3' && {RH} complete");
        let reason = denied(&command).expect("denied");
        assert!(reason.starts_with("STOP GUARD"), "{reason}");
        assert!(reason.contains("(s2) google"), "{reason}");
        let command = format!("git commit -m '{RH} step complete s4 && {RH} complete'");
        assert_eq!(denied(&command), None);
    }

    #[test]
    fn adding_a_step_in_the_chain_keeps_it_open() {
        let command = format!(
            "{RH} step complete s2; {RH} step complete s3; {RH} step complete s4; {RH} step add docs; {RH} complete"
        );
        let reason = denied(&command).expect("denied");
        assert!(reason.contains("(s5) docs"), "{reason}");
    }

    #[test]
    fn nested_and_unknown_calls_are_judged_as_now() {
        let command = format!(
            "bash -c '{RH} step complete s2 && {RH} step complete s3 && {RH} step complete s4' && {RH} complete"
        );
        let reason = denied(&command).expect("denied");
        assert!(reason.contains("judged the task as it is now"), "{reason}");
        let command = format!("{RH} step complete s2 && bash -c '{RH} complete'");
        assert!(denied(&command).is_some());
        let command = format!("{RH} step complete s9 && {RH} complete");
        let reason = denied(&command).expect("denied");
        assert!(reason.contains("would fail"), "{reason}");
        let command = format!("{RH} step complete s2 | {RH} complete");
        assert!(denied(&command).is_some());
    }

    /// Every form the shell reader finds a `task complete` in (issue 10's
    /// list) is still denied when steps are open and the chain closes none.
    #[test]
    fn every_invocation_form_is_still_judged() {
        for command in crate::guards::shell::tests::INVOCATION_FORMS
            .iter()
            .copied()
            .chain([
                "cargo run -q --bin ralph-hooks -- task complete",
                "echo 'ralph-hooks task complete' | sh",
                "printf 'ralph-hooks task step complete s2 && ralph-hooks task complete' | bash",
                "bash <<< 'ralph-hooks task complete'",
            ])
        {
            assert!(denied(command).is_some(), "allowed: {command}");
        }
    }

    #[test]
    fn a_plain_complete_keeps_the_old_message() {
        let reason = denied(&format!("{RH} complete")).unwrap();
        assert_eq!(Some(reason), tasks::stop_guard_message(&doc()));
        assert_eq!(denied(&format!("{RH} complete --force")), None);
    }
}

//! The Claude Code hook wire format: what arrives on stdin and what we print.
//!
//! Inputs are tolerant: every field except `hook_event_name` may be missing,
//! and unknown fields are ignored, because Claude Code adds fields often (see
//! `shared/reference/claude-code-hooks.md` §1). Outputs are minimal: a field is
//! written only when it carries a decision, and the type system makes the one
//! dangerous answer, `permissionDecision: "allow"`, impossible to express.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The events our binaries accept, named as Claude Code names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventName {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    /// A tool call that failed — for Bash, a command whose exit status was
    /// not 0 — or was interrupted (2.1.332 sends it instead of PostToolUse).
    /// Its effects happened all the same. Honours `additionalContext` only.
    PostToolUseFailure,
    Stop,
    SubagentStop,
    /// An API error ended the turn instead of a Stop (a rate or usage
    /// limit, an overloaded or failing server). Fire-and-forget: Claude
    /// Code ignores the hook's output and exit code.
    StopFailure,
    /// A shell line of a skill or a slash command (`` !`cmd` ``) about to
    /// run (2.1.332). Answered like PreToolUse: a `deny` keeps it from
    /// running.
    PreSkillShellCommand,
}

impl EventName {
    pub fn as_str(self) -> &'static str {
        match self {
            EventName::SessionStart => "SessionStart",
            EventName::UserPromptSubmit => "UserPromptSubmit",
            EventName::PreToolUse => "PreToolUse",
            EventName::PostToolUse => "PostToolUse",
            EventName::PostToolUseFailure => "PostToolUseFailure",
            EventName::Stop => "Stop",
            EventName::SubagentStop => "SubagentStop",
            EventName::StopFailure => "StopFailure",
            EventName::PreSkillShellCommand => "PreSkillShellCommand",
        }
    }

    pub fn parse(name: &str) -> Option<EventName> {
        Some(match name {
            "SessionStart" => EventName::SessionStart,
            "UserPromptSubmit" => EventName::UserPromptSubmit,
            "PreToolUse" => EventName::PreToolUse,
            "PostToolUse" => EventName::PostToolUse,
            "PostToolUseFailure" => EventName::PostToolUseFailure,
            "Stop" => EventName::Stop,
            "SubagentStop" => EventName::SubagentStop,
            "StopFailure" => EventName::StopFailure,
            "PreSkillShellCommand" => EventName::PreSkillShellCommand,
            _ => return None,
        })
    }
}

/// Fields every event carries (or may carry).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Common {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub transcript_path: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub permission_mode: Option<String>,
    #[serde(default)]
    pub prompt_id: Option<String>,
    /// Set when the event fires inside a subagent.
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub agent_type: Option<String>,
    /// The project, where another harness's adapter knows it apart from
    /// `cwd` (a shell call's folder): Cursor's first workspace root. Not a
    /// Claude Code field; `$CLAUDE_PROJECT_DIR` wins over it.
    #[serde(default)]
    pub ralph_project_dir: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct SessionStartInput {
    #[serde(flatten)]
    pub common: Common,
    /// `startup`, `resume`, `clear`, `compact` or `fork`; absent on old clients.
    #[serde(default)]
    pub source: Option<String>,
}

/// UserPromptSubmit: a prompt about to reach Claude — usually the user's.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UserPromptInput {
    #[serde(flatten)]
    pub common: Common,
    /// The prompt as typed (a slash command arrives as its `/name …` text).
    #[serde(default)]
    pub prompt: String,
    /// Who wrote the prompt (2.1.3xx schema): `user` (the composer), `sdk`
    /// (`-p`, the Agent SDK), `system` (task notifications, peer and
    /// channel messages, auto-continuation), `loop_wakeup`,
    /// `schedule_wakeup`, `poll_event`. Absent while the field rolls out:
    /// 2.1.330 sends it on no prompt at all, 2.1.332 on none in `-p`.
    #[serde(default)]
    pub source: Option<String>,
}

/// How a prompt that Claude Code made itself to wake the session after an
/// `asyncRewake` hook begins. 2.1.330 sends no `source` with it, so the text
/// is the only sign that no person wrote it.
pub const TASK_NOTIFICATION_PREFIX: &str = "<task-notification>";

impl UserPromptInput {
    /// Whether a person may have written this prompt: `source` is `user`
    /// or absent, and it is not a task notification (a woken turn). Only
    /// such a prompt may say "stop", lift a pause or reset the loop's count
    /// of blocks in a row. An absent `source` is not proof (2.1.332 sends
    /// none in `claude -p`): the prompt hook asks the transcript too.
    pub fn is_from_user(&self) -> bool {
        let by_user = matches!(self.source.as_deref(), None | Some("user"));
        by_user
            && !self
                .prompt
                .trim_start()
                .starts_with(TASK_NOTIFICATION_PREFIX)
    }
}

/// PreToolUse, PostToolUse and PostToolUseFailure share this shape;
/// `tool_response` is only present on PostToolUse, `error` and
/// `is_interrupt` only on PostToolUseFailure.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ToolInput {
    #[serde(flatten)]
    pub common: Common,
    #[serde(default)]
    pub tool_name: String,
    /// Kept as raw JSON: every tool has its own shape and we read it defensively.
    #[serde(default)]
    pub tool_input: Value,
    #[serde(default)]
    pub tool_response: Value,
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// PostToolUseFailure: what went wrong (`Exit code 1`, with the
    /// command's output after it when there was some).
    #[serde(default, deserialize_with = "lenient_string")]
    pub error: Option<String>,
    /// PostToolUseFailure: the user interrupted the call.
    #[serde(default)]
    pub is_interrupt: Option<Value>,
}

/// A string field that is `None` when it is anything but a string.
fn lenient_string<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => Some(text),
        _ => None,
    })
}

impl ToolInput {
    /// A string field of `tool_input`, if present and a string.
    pub fn input_str(&self, key: &str) -> Option<&str> {
        self.tool_input.get(key).and_then(Value::as_str)
    }
}

/// PreSkillShellCommand (2.1.332): a `` !`cmd` `` line of a skill or a
/// slash command, its arguments filled in, about to run with no Bash tool
/// call (so no PreToolUse).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SkillShellInput {
    /// The common fields, `tool_name` (`Bash` or `PowerShell`),
    /// `tool_input.command` and `tool_use_id` (which names no tool call in
    /// the transcript), read as a tool call.
    #[serde(flatten)]
    pub tool: ToolInput,
    /// The skill or slash command the line belongs to.
    #[serde(default)]
    pub command_name: Option<String>,
    #[serde(default)]
    pub command_source: Option<Value>,
    /// `user` (the user typed the slash command), `claude` (the Skill
    /// tool), `other`; absent on no client seen so far.
    #[serde(default)]
    pub invoked_by: Option<String>,
}

impl SkillShellInput {
    /// The user typed the slash command whose line this is.
    pub fn invoked_by_user(&self) -> bool {
        self.invoked_by.as_deref() == Some("user")
    }
}

/// Stop and SubagentStop.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StopInput {
    #[serde(flatten)]
    pub common: Common,
    /// True when Claude is already continuing because a Stop hook blocked.
    /// One bit, not a counter: a fresh user turn resets it to false.
    #[serde(default)]
    pub stop_hook_active: bool,
    /// The final assistant text of the turn (v2.1.47+). Preferred over the
    /// transcript, which is written asynchronously and can lag.
    #[serde(default)]
    pub last_assistant_message: Option<String>,
    /// Background work still running; its shape is not documented, so the
    /// entries stay raw.
    #[serde(default)]
    pub background_tasks: Vec<Value>,
    #[serde(default)]
    pub session_crons: Vec<Value>,
}

/// StopFailure: the turn ended on an API error, not a Stop.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StopFailureInput {
    #[serde(flatten)]
    pub common: Common,
    /// `rate_limit`, `overloaded`, `server_error`, `authentication_failed`,
    /// `billing_error`, … (the hook's matcher values); `unknown` when the
    /// client could not tell.
    #[serde(default)]
    pub error: Option<String>,
    /// In the schema, absent in every 2.1.330 run.
    #[serde(default)]
    pub error_details: Option<Value>,
    /// The error as the user saw it: `You've hit your 5-hour limit · resets
    /// 12:18pm (UTC)`, `API Error: 529 Overloaded. …`.
    #[serde(default)]
    pub last_assistant_message: Option<String>,
}

impl StopInput {
    /// Background tasks that are still running. An entry without a status is
    /// taken as running: Claude Code lists finished ones rarely, and holding a
    /// stop one time too many is cheaper than cutting off running work.
    /// A Monitor's script (`type: monitor`, 2.1.329+) is not counted: it
    /// watches and reports, it is not work the turn waits on, and it may run
    /// for as long as the session does — counted, one `Monitor` call would
    /// let every later stop through.
    pub fn running_background_tasks(&self) -> usize {
        self.background_tasks
            .iter()
            .filter(|task| task.get("type").and_then(Value::as_str) != Some("monitor"))
            .filter(|task| {
                let status = task
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("running");
                !matches!(
                    status.to_ascii_lowercase().as_str(),
                    "completed"
                        | "done"
                        | "failed"
                        | "killed"
                        | "cancelled"
                        | "canceled"
                        | "stopped"
                        | "exited"
                )
            })
            .count()
    }
}

/// One parsed hook input.
#[derive(Debug, Clone)]
pub enum HookInput {
    SessionStart(SessionStartInput),
    UserPromptSubmit(UserPromptInput),
    PreToolUse(ToolInput),
    PostToolUse(ToolInput),
    PostToolUseFailure(ToolInput),
    Stop(StopInput),
    SubagentStop(StopInput),
    StopFailure(StopFailureInput),
    PreSkillShellCommand(SkillShellInput),
}

impl HookInput {
    pub fn event(&self) -> EventName {
        match self {
            HookInput::SessionStart(_) => EventName::SessionStart,
            HookInput::UserPromptSubmit(_) => EventName::UserPromptSubmit,
            HookInput::PreToolUse(_) => EventName::PreToolUse,
            HookInput::PostToolUse(_) => EventName::PostToolUse,
            HookInput::PostToolUseFailure(_) => EventName::PostToolUseFailure,
            HookInput::Stop(_) => EventName::Stop,
            HookInput::SubagentStop(_) => EventName::SubagentStop,
            HookInput::StopFailure(_) => EventName::StopFailure,
            HookInput::PreSkillShellCommand(_) => EventName::PreSkillShellCommand,
        }
    }

    pub fn common(&self) -> &Common {
        match self {
            HookInput::SessionStart(input) => &input.common,
            HookInput::UserPromptSubmit(input) => &input.common,
            HookInput::PreToolUse(input)
            | HookInput::PostToolUse(input)
            | HookInput::PostToolUseFailure(input) => &input.common,
            HookInput::Stop(input) | HookInput::SubagentStop(input) => &input.common,
            HookInput::StopFailure(input) => &input.common,
            HookInput::PreSkillShellCommand(input) => &input.tool.common,
        }
    }
}

/// Why an input was rejected. Each message is one line naming the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    Empty,
    TooLarge {
        limit: usize,
    },
    NotUtf8 {
        valid_up_to: usize,
    },
    NotJson(String),
    NotObject(&'static str),
    MissingEvent,
    WrongEvent {
        got: String,
        expected: Vec<&'static str>,
    },
    BadField(String),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Empty => write!(f, "empty stdin: expected one hook JSON object"),
            InputError::TooLarge { limit } => {
                write!(
                    f,
                    "stdin is larger than {} MiB: refusing to parse it",
                    limit / (1024 * 1024)
                )
            }
            InputError::NotUtf8 { valid_up_to } => {
                write!(
                    f,
                    "stdin is not valid UTF-8 (first bad byte at offset {valid_up_to})"
                )
            }
            InputError::NotJson(error) => write!(f, "stdin is not JSON: {error}"),
            InputError::NotObject(kind) => write!(f, "stdin is a JSON {kind}, expected an object"),
            InputError::MissingEvent => write!(f, "input has no string hook_event_name"),
            InputError::WrongEvent { got, expected } => {
                write!(
                    f,
                    "wrong event {got:?} for this hook (it handles {})",
                    expected.join(", ")
                )
            }
            InputError::BadField(error) => {
                write!(f, "input has a field of the wrong type: {error}")
            }
        }
    }
}

impl std::error::Error for InputError {}

/// The largest stdin we accept. Real payloads are a few KiB; a Write of a big
/// file can reach a few MiB. Past this we refuse rather than buffer without end.
pub const MAX_INPUT_BYTES: usize = 8 * 1024 * 1024;

/// What can be read from the start of an input too large to parse: the
/// top-level string fields Claude Code sends first (`session_id`, `cwd`,
/// `hook_event_name`, `tool_name`) and the tool's `file_path`, which comes
/// before the file's content. Each is the first occurrence of its key, so
/// it is only as good as that order; it is used to say "not checked",
/// never to decide that something is fine.
#[derive(Debug, Default)]
pub struct Head {
    pub common: Common,
    pub hook_event_name: Option<String>,
    pub tool_name: Option<String>,
    pub file_path: Option<String>,
}

impl Head {
    /// How much of the input is looked at.
    const HEAD_BYTES: usize = 64 * 1024;

    pub fn of(bytes: &[u8]) -> Head {
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(Head::HEAD_BYTES)]);
        let field = |key: &str| string_field(&head, key);
        Head {
            common: Common {
                session_id: field("session_id"),
                transcript_path: field("transcript_path"),
                cwd: field("cwd"),
                // Cursor names the project only here (re-attack RA-5).
                ralph_project_dir: first_string_in(&head, "workspace_roots"),
                ..Common::default()
            },
            hook_event_name: field("hook_event_name"),
            tool_name: field("tool_name"),
            file_path: field("file_path"),
        }
    }
}

/// The JSON string after the first `"key":` in `text`.
fn string_field(text: &str, key: &str) -> Option<String> {
    let quoted = format!("\"{key}\"");
    let at = text.find(&quoted)? + quoted.len();
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    serde_json::Deserializer::from_str(rest)
        .into_iter::<String>()
        .next()?
        .ok()
}

/// The first string of the JSON array after the first `"key":` in `text`.
fn first_string_in(text: &str, key: &str) -> Option<String> {
    let quoted = format!("\"{key}\"");
    let at = text.find(&quoted)? + quoted.len();
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('[')?.trim_start();
    serde_json::Deserializer::from_str(rest)
        .into_iter::<String>()
        .next()?
        .ok()
}

/// Parses raw stdin bytes into a typed input, accepting only `accepted` events.
pub fn parse_input(bytes: &[u8], accepted: &[EventName]) -> Result<HookInput, InputError> {
    input_from_value(parse_object(bytes)?, accepted)
}

/// The first half of [`parse_input`]: stdin as one JSON object, before any
/// field is read (a harness adapter rewrites it into Claude Code's shape).
pub fn parse_object(bytes: &[u8]) -> Result<Value, InputError> {
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(InputError::TooLarge {
            limit: MAX_INPUT_BYTES,
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|error| InputError::NotUtf8 {
        valid_up_to: error.valid_up_to(),
    })?;
    if text.trim().is_empty() {
        return Err(InputError::Empty);
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        // Claude Code can send a lone surrogate escape (`"\ud800"`, from a
        // cut emoji): JSON allows it, serde does not. Read it as U+FFFD so
        // the hook still decides instead of failing open.
        Err(error) => match replace_lone_surrogates(text) {
            Some(repaired) => serde_json::from_str(&repaired)
                .map_err(|error| InputError::NotJson(error.to_string()))?,
            None => return Err(InputError::NotJson(error.to_string())),
        },
    };
    let object_kind = match &value {
        Value::Object(_) => None,
        Value::Array(_) => Some("array"),
        Value::String(_) => Some("string"),
        Value::Number(_) => Some("number"),
        Value::Bool(_) => Some("boolean"),
        Value::Null => Some("null"),
    };
    if let Some(kind) = object_kind {
        return Err(InputError::NotObject(kind));
    }
    Ok(value)
}

/// The second half of [`parse_input`]: a JSON object in Claude Code's shape
/// as a typed input, accepting only `accepted` events.
pub fn input_from_value(value: Value, accepted: &[EventName]) -> Result<HookInput, InputError> {
    let event_name = value
        .get("hook_event_name")
        .and_then(Value::as_str)
        .ok_or(InputError::MissingEvent)?;
    let event = EventName::parse(event_name)
        .filter(|event| accepted.contains(event))
        .ok_or_else(|| InputError::WrongEvent {
            got: event_name.to_string(),
            expected: accepted.iter().map(|e| e.as_str()).collect(),
        })?;
    if matches!(
        event,
        EventName::PreToolUse
            | EventName::PostToolUse
            | EventName::PostToolUseFailure
            | EventName::PreSkillShellCommand
    ) {
        check_tool_input(&value)?;
    }
    let bad = |error: serde_json::Error| InputError::BadField(error.to_string());
    Ok(match event {
        EventName::SessionStart => {
            HookInput::SessionStart(serde_json::from_value(value).map_err(bad)?)
        }
        EventName::UserPromptSubmit => {
            HookInput::UserPromptSubmit(serde_json::from_value(value).map_err(bad)?)
        }
        EventName::PreToolUse => HookInput::PreToolUse(serde_json::from_value(value).map_err(bad)?),
        EventName::PostToolUse => {
            HookInput::PostToolUse(serde_json::from_value(value).map_err(bad)?)
        }
        EventName::PostToolUseFailure => {
            HookInput::PostToolUseFailure(serde_json::from_value(value).map_err(bad)?)
        }
        EventName::Stop => HookInput::Stop(serde_json::from_value(value).map_err(bad)?),
        EventName::SubagentStop => {
            HookInput::SubagentStop(serde_json::from_value(value).map_err(bad)?)
        }
        EventName::StopFailure => {
            HookInput::StopFailure(serde_json::from_value(value).map_err(bad)?)
        }
        EventName::PreSkillShellCommand => {
            HookInput::PreSkillShellCommand(serde_json::from_value(value).map_err(bad)?)
        }
    })
}

/// The fields of `tool_input` that hooks read, which must be strings when
/// present. Every hook answers a wrong type the same way: bad input, exit 1
/// with one line (before, the guard let it pass silently while the Stop
/// hook refused its own wrong-typed fields).
const TOOL_INPUT_STRINGS: &[&str] = &["command", "file_path", "notebook_path", "prompt"];

fn check_tool_input(value: &Value) -> Result<(), InputError> {
    let tool_input = match value.get("tool_input") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(InputError::BadField(format!(
                "tool_input is {}, expected an object",
                json_kind(other)
            )));
        }
    };
    for key in TOOL_INPUT_STRINGS {
        match tool_input.get(*key) {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(other) => {
                return Err(InputError::BadField(format!(
                    "tool_input.{key} is {}, expected a string",
                    json_kind(other)
                )));
            }
        }
    }
    Ok(())
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
    }
}

/// `text` with each `\uD800`–`\uDFFF` escape that is not half of a valid
/// pair replaced by `\uFFFD`; `None` when there is none to replace.
pub fn replace_lone_surrogates(text: &str) -> Option<String> {
    fn escape_at(bytes: &[u8], at: usize) -> Option<u16> {
        if bytes.get(at) != Some(&b'\\') || bytes.get(at + 1) != Some(&b'u') {
            return None;
        }
        let hex = std::str::from_utf8(bytes.get(at + 2..at + 6)?).ok()?;
        u16::from_str_radix(hex, 16).ok()
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut in_string = false;
    let mut index = 0;
    let mut copied = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                if let Some(unit) = escape_at(bytes, index) {
                    let high = (0xD800..0xDC00).contains(&unit);
                    let low = (0xDC00..0xE000).contains(&unit);
                    if high
                        && escape_at(bytes, index + 6)
                            .is_some_and(|next| (0xDC00..0xE000).contains(&next))
                    {
                        index += 12;
                        continue;
                    }
                    if high || low {
                        out.push_str(&text[copied..index]);
                        out.push_str("\\uFFFD");
                        index += 6;
                        copied = index;
                        changed = true;
                        continue;
                    }
                }
                // Any other escape: skip the escaped character too.
                index += 2;
                continue;
            }
            _ => {}
        }
        index += 1;
    }
    if !changed {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// The only PreToolUse permission decision we ever emit. `allow` is left out
/// on purpose: it would bypass the user's own permission prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionDecision {
    Deny,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSpecificOutput {
    /// Required by Claude Code whenever `hookSpecificOutput` is present.
    pub hook_event_name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_context: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_decision: Option<PermissionDecision>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_decision_reason: Option<String>,
}

/// Top-level `decision`; Claude Code knows only `block`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Block,
}

/// What a hook prints on stdout. Every field is optional; an all-empty output
/// prints nothing at all.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Shown to the user, not to Claude.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_message: Option<String>,
    /// Escape sequences Claude Code writes to the user's terminal (v2.1.141+):
    /// only OSC 0/1/2/9/99/777 and BEL pass its allow-list; we send desktop
    /// notifications (OSC 9, OSC 777) this way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminal_sequence: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_specific_output: Option<HookSpecificOutput>,
}

/// Claude Code caps each output string at 10,000 characters and replaces a
/// longer one with a file path and preview. We keep well under it.
pub const MAX_OUTPUT_CHARS: usize = 9_500;

impl HookOutput {
    /// Nothing to say: exit 0 with empty stdout.
    pub fn silent() -> HookOutput {
        HookOutput::default()
    }

    pub fn is_silent(&self) -> bool {
        *self == HookOutput::default()
    }

    /// Every text for Claude or the user with its control characters
    /// escaped (newlines and tabs kept): a loop's goal, a file name or a
    /// tool's output in a reason must not drive the terminal that shows it
    /// (harness attack H-10: the goal reached Cursor's and Copilot's next
    /// prompt raw). The terminal sequence is ours and stays.
    pub fn with_prose_escaped(mut self) -> HookOutput {
        fn clean(text: &mut Option<String>) {
            if let Some(text) = text
                && let std::borrow::Cow::Owned(escaped) =
                    crate::util::text::escape_controls_in_prose(text)
            {
                *text = escaped;
            }
        }
        clean(&mut self.reason);
        clean(&mut self.system_message);
        if let Some(specific) = self.hook_specific_output.as_mut() {
            clean(&mut specific.additional_context);
            clean(&mut specific.permission_decision_reason);
        }
        self
    }

    /// Stop/SubagentStop: keep Claude working, with `reason` as its next instruction.
    pub fn block(reason: impl Into<String>) -> HookOutput {
        HookOutput {
            decision: Some(Decision::Block),
            reason: Some(cap_chars(reason.into())),
            ..HookOutput::default()
        }
    }

    /// PreToolUse: refuse the call; the reason goes to Claude.
    pub fn deny(reason: impl Into<String>) -> HookOutput {
        HookOutput {
            hook_specific_output: Some(HookSpecificOutput {
                hook_event_name: EventName::PreToolUse.as_str(),
                permission_decision: Some(PermissionDecision::Deny),
                permission_decision_reason: Some(cap_chars(reason.into())),
                ..HookSpecificOutput::default()
            }),
            ..HookOutput::default()
        }
    }

    /// Context for Claude, delivered as a system reminder.
    pub fn context(event: EventName, text: impl Into<String>) -> HookOutput {
        HookOutput {
            hook_specific_output: Some(HookSpecificOutput {
                hook_event_name: event.as_str(),
                additional_context: Some(cap_chars(text.into())),
                ..HookSpecificOutput::default()
            }),
            ..HookOutput::default()
        }
    }

    pub fn with_system_message(mut self, message: impl Into<String>) -> HookOutput {
        self.system_message = Some(cap_chars(message.into()));
        self
    }

    /// Adds `message` to the user's message, after what is there.
    pub fn append_system_message(mut self, message: &str) -> HookOutput {
        let joined = match self.system_message.take() {
            Some(existing) if !existing.is_empty() => format!("{existing}\n{message}"),
            _ => message.to_string(),
        };
        self.system_message = Some(cap_chars(joined));
        self
    }

    /// A PreToolUse deny.
    pub fn denies(&self) -> bool {
        self.hook_specific_output
            .as_ref()
            .is_some_and(|specific| specific.permission_decision == Some(PermissionDecision::Deny))
    }

    /// Two answers to parts of one call (a harness's one tool call that
    /// edits several files) as one: a deny wins; otherwise a block, the
    /// context and the user's message say what each said.
    pub fn merged_with(self, other: HookOutput) -> HookOutput {
        if self.denies() {
            return self;
        }
        if other.denies() {
            return other;
        }
        let join = |a: Option<String>, b: Option<String>| match (a, b) {
            (Some(a), Some(b)) => Some(cap_chars(format!("{a}\n{b}"))),
            (a, b) => a.or(b),
        };
        let specific = match (self.hook_specific_output, other.hook_specific_output) {
            (Some(mut a), Some(b)) => {
                a.additional_context = join(a.additional_context, b.additional_context);
                Some(a)
            }
            (a, b) => a.or(b),
        };
        HookOutput {
            decision: self.decision.or(other.decision),
            reason: join(self.reason, other.reason),
            system_message: join(self.system_message, other.system_message),
            terminal_sequence: join(self.terminal_sequence, other.terminal_sequence),
            hook_specific_output: specific,
        }
    }

    /// Adds terminal escape sequences (a desktop notification) after any
    /// already there.
    pub fn with_terminal_sequence(mut self, sequence: Option<String>) -> HookOutput {
        if let Some(sequence) = sequence.filter(|s| !s.is_empty()) {
            let mut joined = self.terminal_sequence.take().unwrap_or_default();
            joined.push_str(&sequence);
            self.terminal_sequence = Some(joined);
        }
        self
    }
}

/// Cuts `text` to [`MAX_OUTPUT_CHARS`] characters, saying so at the end.
pub fn cap_chars(text: String) -> String {
    if text.chars().count() <= MAX_OUTPUT_CHARS {
        return text;
    }
    let marker = "\n… (cut to fit Claude Code's output limit)";
    let keep: String = text
        .chars()
        .take(MAX_OUTPUT_CHARS - marker.chars().count())
        .collect();
    keep + marker
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_output_never_says_allow() {
        let json = serde_json::to_string(&HookOutput::deny("no")).unwrap();
        assert_eq!(
            json,
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
        );
    }

    #[test]
    fn block_output_shape() {
        let json =
            serde_json::to_string(&HookOutput::block("go on").with_system_message("m")).unwrap();
        assert_eq!(
            json,
            r#"{"decision":"block","reason":"go on","systemMessage":"m"}"#
        );
    }

    #[test]
    fn unknown_and_missing_fields_are_tolerated() {
        let input = parse_input(
            br#"{"hook_event_name":"Stop","brand_new_field":{"x":1}}"#,
            &[EventName::Stop],
        )
        .unwrap();
        let HookInput::Stop(stop) = input else {
            panic!("not a stop")
        };
        assert!(!stop.stop_hook_active);
        assert_eq!(stop.common.session_id, None);
    }

    #[test]
    fn effort_and_a_skill_shell_line_parse() {
        let input = parse_input(
            br#"{"hook_event_name":"PreSkillShellCommand","session_id":"s","effort":{"level":"medium"},"tool_name":"Bash","tool_input":{"command":"ralph-hooks loop cancel"},"tool_use_id":"t","command_name":"finish","command_source":"projectSettings","invoked_by":"claude"}"#,
            &[EventName::PreSkillShellCommand],
        )
        .unwrap();
        let HookInput::PreSkillShellCommand(line) = input else {
            panic!("not a skill line");
        };
        assert_eq!(
            line.tool.input_str("command"),
            Some("ralph-hooks loop cancel")
        );
        assert_eq!(line.tool.common.session_id.as_deref(), Some("s"));
        assert!(!line.invoked_by_user());
        let prompt = parse_input(
            br#"{"hook_event_name":"UserPromptSubmit","effort":{"level":"high"},"prompt":"stop"}"#,
            &[EventName::UserPromptSubmit],
        );
        assert!(prompt.is_ok());
    }

    #[test]
    fn background_tasks_count_running_only() {
        let stop: StopInput = serde_json::from_str(
            r#"{"background_tasks":[{"id":"a","status":"running"},{"id":"b","status":"completed"},{"id":"c"}]}"#,
        )
        .unwrap();
        assert_eq!(stop.running_background_tasks(), 2);
        let with_monitor: StopInput = serde_json::from_str(
            r#"{"background_tasks":[{"id":"m","type":"monitor","status":"running"},{"id":"s","type":"shell","status":"running"}]}"#,
        )
        .unwrap();
        assert_eq!(
            with_monitor.running_background_tasks(),
            1,
            "a Monitor's script is not work the stop waits for"
        );
    }

    #[test]
    fn lone_surrogates_read_as_replacement_characters() {
        let input = parse_input(
            br#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push # \ud800 \udc00x \\ud800 \ud83d\ude00"}}"#,
            &[EventName::PreToolUse],
        )
        .unwrap();
        let HookInput::PreToolUse(tool) = input else {
            panic!("not a pre-tool input")
        };
        assert_eq!(
            tool.input_str("command"),
            Some("git push # \u{FFFD} \u{FFFD}x \\ud800 \u{1F600}")
        );
    }

    #[test]
    fn wrong_typed_tool_input_is_bad_input() {
        for body in [
            r#""tool_input":"ls""#,
            r#""tool_input":[1]"#,
            r#""tool_input":{"command":5}"#,
            r#""tool_input":{"file_path":{"x":1}}"#,
        ] {
            let json = format!(r#"{{"hook_event_name":"PreToolUse","tool_name":"Bash",{body}}}"#);
            let error = parse_input(json.as_bytes(), &[EventName::PreToolUse]).unwrap_err();
            assert!(matches!(error, InputError::BadField(_)), "{body}: {error}");
        }
    }

    #[test]
    fn merged_answers_keep_a_deny_and_join_the_rest() {
        let context = |text: &str| HookOutput::context(EventName::PostToolUse, text);
        let merged = context("a.py: 1 error").merged_with(context("b.py: clean"));
        assert_eq!(
            merged
                .hook_specific_output
                .and_then(|specific| specific.additional_context)
                .as_deref(),
            Some("a.py: 1 error\nb.py: clean")
        );
        let denied = HookOutput::silent().merged_with(HookOutput::deny("no"));
        assert!(denied.denies());
        assert!(HookOutput::deny("first").merged_with(context("x")).denies());
    }

    #[test]
    fn long_text_is_capped() {
        let text = "x".repeat(20_000);
        assert_eq!(cap_chars(text).chars().count(), MAX_OUTPUT_CHARS);
    }
}

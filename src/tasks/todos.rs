//! Claude Code's own checklist, rebuilt from the session transcript, for
//! todo continuation in sessions that do not use `ralph-hooks task`.
//!
//! Two tools keep that checklist (see `shared/reference/claude-code-hooks.md`
//! §2 and §6):
//! - `TodoWrite` sends the whole list every time: the latest call's
//!   `input.todos` is the list.
//! - `TaskCreate` / `TaskUpdate` change one item at a time: creates get their
//!   id from the tool result (`toolUseResult.task.id`), updates name it
//!   (`taskId`, with `status` or `subject`; status `deleted` removes it), so
//!   the list is the replay of every call.
//!
//! Whichever tool was used last decides. Only the transcript's tail is read
//! (at most [`MAX_SCAN_BYTES`]), and a line is parsed only when it can
//! matter, so a long session costs one bounded read and a substring scan.

use std::path::Path;

use serde_json::Value;

/// How much of the transcript's end is read. Task tool calls made earlier
/// than this are not seen; a list that old is rarely still the live one.
pub const MAX_SCAN_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

impl TodoStatus {
    fn parse(text: &str) -> TodoStatus {
        match text {
            "completed" | "done" => TodoStatus::Completed,
            "in_progress" => TodoStatus::InProgress,
            _ => TodoStatus::Pending,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }

    pub fn is_open(self) -> bool {
        self != TodoStatus::Completed
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodoItem {
    /// The Task tools' id (`"3"`); empty for TodoWrite items.
    pub id: String,
    pub content: String,
    pub status: TodoStatus,
}

/// Which tool the list came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TodoSource {
    TodoWrite,
    TaskTools,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodoList {
    pub source: TodoSource,
    pub items: Vec<TodoItem>,
}

impl TodoList {
    pub fn open(&self) -> Vec<&TodoItem> {
        self.items.iter().filter(|i| i.status.is_open()).collect()
    }
}

/// The current checklist of the session whose transcript is at `path`;
/// `None` when the tail shows no todo tool at all (or cannot be read).
pub fn current_list(path: &Path) -> Option<TodoList> {
    let lines = crate::hook::transcript::tail_lines(path, MAX_SCAN_BYTES).ok()?;
    from_lines(lines.iter().map(String::as_str))
}

/// The replay itself, over transcript lines oldest first.
pub fn from_lines<'a>(lines: impl Iterator<Item = &'a str>) -> Option<TodoList> {
    let mut replay = Replay::default();
    for (index, line) in lines.enumerate() {
        replay.line(index, line);
    }
    replay.finish()
}

#[derive(Default)]
struct Replay {
    /// The latest TodoWrite list and the line it came from.
    todo_write: Option<(usize, Vec<TodoItem>)>,
    /// Task tool items in creation order.
    tasks: Vec<TodoItem>,
    /// TaskCreate calls whose result (with the id) has not been seen yet:
    /// (tool_use_id, subject).
    pending_creates: Vec<(String, String)>,
    last_task_event: Option<usize>,
}

impl Replay {
    fn line(&mut self, index: usize, line: &str) {
        let mentions_tool = line.contains("TodoWrite")
            || line.contains("TaskCreate")
            || line.contains("TaskUpdate");
        let answers_create = !self.pending_creates.is_empty()
            && line.contains("toolUseResult")
            && self
                .pending_creates
                .iter()
                .any(|(tool_use_id, _)| line.contains(tool_use_id.as_str()));
        if !mentions_tool && !answers_create {
            return;
        }
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            return;
        };
        // Subagent messages are not the main agent's checklist.
        if record.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            return;
        }
        let Some(content) = record.pointer("/message/content").and_then(Value::as_array) else {
            return;
        };
        match record.get("type").and_then(Value::as_str) {
            Some("assistant") => {
                for block in content {
                    if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                        self.tool_use(index, block);
                    }
                }
            }
            Some("user") => {
                for block in content {
                    if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                        self.tool_result(index, block, record.get("toolUseResult"));
                    }
                }
            }
            _ => {}
        }
    }

    fn tool_use(&mut self, index: usize, block: &Value) {
        let input = block.get("input").unwrap_or(&Value::Null);
        match block.get("name").and_then(Value::as_str) {
            Some("TodoWrite") => {
                let Some(todos) = input.get("todos").and_then(Value::as_array) else {
                    return;
                };
                let items = todos
                    .iter()
                    .filter_map(|todo| {
                        let content = todo.get("content").and_then(Value::as_str)?.trim();
                        (!content.is_empty()).then(|| TodoItem {
                            id: String::new(),
                            content: content.to_string(),
                            status: TodoStatus::parse(
                                todo.get("status").and_then(Value::as_str).unwrap_or(""),
                            ),
                        })
                    })
                    .collect();
                self.todo_write = Some((index, items));
            }
            Some("TaskCreate") => {
                let subject = input
                    .get("subject")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim();
                let tool_use_id = block.get("id").and_then(Value::as_str).unwrap_or("");
                if subject.is_empty() || tool_use_id.is_empty() {
                    return;
                }
                self.pending_creates
                    .push((tool_use_id.to_string(), subject.to_string()));
                self.last_task_event = Some(index);
            }
            Some("TaskUpdate") => {
                let Some(task_id) = input.get("taskId").and_then(value_as_id) else {
                    return;
                };
                self.last_task_event = Some(index);
                let status = input.get("status").and_then(Value::as_str);
                if status == Some("deleted") {
                    self.tasks.retain(|item| item.id != task_id);
                    return;
                }
                if let Some(item) = self.tasks.iter_mut().find(|item| item.id == task_id) {
                    if let Some(status) = status {
                        item.status = TodoStatus::parse(status);
                    }
                    if let Some(subject) = input.get("subject").and_then(Value::as_str)
                        && !subject.trim().is_empty()
                    {
                        item.content = subject.trim().to_string();
                    }
                }
            }
            _ => {}
        }
    }

    fn tool_result(&mut self, index: usize, block: &Value, result: Option<&Value>) {
        let Some(tool_use_id) = block.get("tool_use_id").and_then(Value::as_str) else {
            return;
        };
        let Some(at) = self
            .pending_creates
            .iter()
            .position(|(id, _)| id == tool_use_id)
        else {
            return;
        };
        let (_, subject) = self.pending_creates.remove(at);
        if block.get("is_error").and_then(Value::as_bool) == Some(true) {
            return;
        }
        let Some(task_id) = result
            .and_then(|r| r.pointer("/task/id"))
            .and_then(value_as_id)
        else {
            return;
        };
        self.tasks.retain(|item| item.id != task_id);
        self.tasks.push(TodoItem {
            id: task_id,
            content: subject,
            status: TodoStatus::Pending,
        });
        self.last_task_event = Some(index);
    }

    fn finish(mut self) -> Option<TodoList> {
        // A create whose result is not in the transcript yet (it is written
        // asynchronously) still names an open item; its id is unknown.
        let unanswered = std::mem::take(&mut self.pending_creates);
        for (_, subject) in unanswered {
            self.tasks.push(TodoItem {
                id: String::new(),
                content: subject,
                status: TodoStatus::Pending,
            });
        }
        let todo_write_at = self.todo_write.as_ref().map(|(index, _)| *index);
        match (todo_write_at, self.last_task_event) {
            (None, None) => None,
            (Some(write_at), Some(task_at)) if task_at > write_at => Some(TodoList {
                source: TodoSource::TaskTools,
                items: self.tasks,
            }),
            (None, Some(_)) => Some(TodoList {
                source: TodoSource::TaskTools,
                items: self.tasks,
            }),
            (Some(_), _) => self.todo_write.map(|(_, items)| TodoList {
                source: TodoSource::TodoWrite,
                items,
            }),
        }
    }
}

/// Task ids are strings (`"3"`); accept a number too.
fn value_as_id(value: &Value) -> Option<String> {
    match value {
        Value::String(text) if !text.is_empty() => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(lines: &[&str]) -> Option<TodoList> {
        from_lines(lines.iter().copied())
    }

    #[test]
    fn latest_todo_write_wins() {
        let got = list(&[
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a","name":"TodoWrite","input":{"todos":[{"content":"x","status":"pending","activeForm":"x"}]}}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"b","name":"TodoWrite","input":{"todos":[{"content":"x","status":"completed","activeForm":"x"},{"content":"y","status":"in_progress","activeForm":"y"}]}}]}}"#,
        ])
        .unwrap();
        assert_eq!(got.source, TodoSource::TodoWrite);
        assert_eq!(got.items.len(), 2);
        assert_eq!(got.open().len(), 1);
        assert_eq!(got.open()[0].content, "y");
    }

    #[test]
    fn nothing_to_find_is_none() {
        assert!(list(&[r#"{"type":"user","message":{"content":"hi"}}"#, "not json"]).is_none());
    }

    #[test]
    fn task_tools_after_todo_write_take_over() {
        let got = list(&[
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a","name":"TodoWrite","input":{"todos":[{"content":"old","status":"pending"}]}}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"TaskCreate","input":{"subject":"new"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"Task #7 created successfully: new"}]},"toolUseResult":{"task":{"id":"7","subject":"new"}}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"TaskUpdate","input":{"taskId":"7","status":"in_progress"}}]}}"#,
        ])
        .unwrap();
        assert_eq!(got.source, TodoSource::TaskTools);
        assert_eq!(
            got.items,
            vec![TodoItem {
                id: "7".into(),
                content: "new".into(),
                status: TodoStatus::InProgress
            }]
        );
    }

    #[test]
    fn failed_create_and_deleted_task_drop_out() {
        let got = list(&[
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"TaskCreate","input":{"subject":"a"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"bad"}]},"toolUseResult":"Error"}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"TaskCreate","input":{"subject":"b"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"}]},"toolUseResult":{"task":{"id":"1","subject":"b"}}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t3","name":"TaskUpdate","input":{"taskId":"1","status":"deleted"}}]}}"#,
        ])
        .unwrap();
        assert!(got.items.is_empty(), "{got:?}");
    }

    #[test]
    fn unanswered_create_still_counts_as_open() {
        let got = list(&[
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"TaskCreate","input":{"subject":"a"}}]}}"#,
        ])
        .unwrap();
        assert_eq!(got.open().len(), 1);
    }

    #[test]
    fn sidechain_lines_are_ignored() {
        assert!(list(&[
            r#"{"type":"assistant","isSidechain":true,"message":{"content":[{"type":"tool_use","id":"a","name":"TodoWrite","input":{"todos":[{"content":"x","status":"pending"}]}}]}}"#,
        ])
        .is_none());
    }
}

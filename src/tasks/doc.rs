//! The task file, `tasks/task_<id>.md`, in its markdown format, parsed
//! into types and written back without losing what a person added.
//!
//! ```text
//! # Task: task_20261121T120000Z
//!
//! ## Metadata
//!
//! - **Status:** in_progress
//! - **Priority:** high
//! - **Created:** 2026-11-21T12:00:00.000Z
//!
//! ## Description
//!
//! OAuth login
//!
//! ## Steps
//!
//! - [x] (s1) read the auth code
//! - [>] (s2) add the Google strategy
//! - [ ] (s3) add the GitHub callback
//! - [-] (s4) skipped step
//!
//! ## Progress
//!
//! - Task started
//! - [s1] read the auth code — done
//!
//! ## Last Activity
//!
//! 2026-11-21T12:30:00.000Z
//! ```
//!
//! Round trip: every line we do not understand (an unknown section, a note
//! under a step, a free-text line between progress items, a metadata line in
//! another shape) is kept as a raw line at its place. Items (steps, progress
//! lines, metadata fields) live in a [`Listed`], which remembers where the
//! items sat between the raw lines, so reordering or replacing steps moves
//! only the steps. Blank lines at the edges of a section are normalised to
//! one; blank lines inside a section are kept.

/// Where an item or a raw line sits inside a section.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    Item,
    Raw(String),
}

/// Items of one section between the raw lines a person put there. The
/// layout always has exactly one `Item` slot per item, so parse ∘ write is
/// the identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed<T> {
    items: Vec<T>,
    layout: Vec<Slot>,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed {
            items: Vec::new(),
            layout: Vec::new(),
        }
    }
}

impl<T> Listed<T> {
    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// Items can change in place; the count changes only through `push`,
    /// `replace_all` and `retain`, which keep the layout in step.
    pub fn items_mut(&mut self) -> &mut [T] {
        &mut self.items
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Appends after the last item (raw lines after it stay after it only
    /// when they are not the section's trailing lines: a person's closing
    /// remark stays last).
    pub fn push(&mut self, item: T) {
        let at = match self.layout.iter().rposition(|slot| *slot == Slot::Item) {
            Some(last) => last + 1,
            None => self.layout.len(),
        };
        self.layout.insert(at, Slot::Item);
        self.items.push(item);
    }

    /// Replaces every item; the new ones take the place of the first old one.
    pub fn replace_all(&mut self, items: Vec<T>) {
        let first = self.layout.iter().position(|slot| *slot == Slot::Item);
        self.layout.retain(|slot| *slot != Slot::Item);
        let at = first.unwrap_or(self.layout.len()).min(self.layout.len());
        for offset in 0..items.len() {
            self.layout.insert(at + offset, Slot::Item);
        }
        self.items = items;
    }

    /// Reorders the items; the slots stay where they are.
    pub fn reorder(&mut self, order: impl FnOnce(&mut Vec<T>)) {
        let before = self.items.len();
        order(&mut self.items);
        debug_assert_eq!(before, self.items.len());
    }

    fn parse(lines: &[String], mut parse_item: impl FnMut(&str) -> Option<T>) -> Listed<T> {
        let mut listed = Listed::default();
        for line in lines {
            match parse_item(line) {
                Some(item) => {
                    listed.items.push(item);
                    listed.layout.push(Slot::Item);
                }
                None => listed.layout.push(Slot::Raw(line.clone())),
            }
        }
        listed
    }

    fn render(&self, out: &mut Vec<String>, render_item: impl Fn(&T, &mut Vec<String>)) {
        let mut items = self.items.iter();
        for slot in &self.layout {
            match slot {
                Slot::Item => {
                    if let Some(item) = items.next() {
                        render_item(item, out);
                    }
                }
                Slot::Raw(line) => out.push(line.clone()),
            }
        }
        for item in items {
            render_item(item, out);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StepStatus {
    Pending,
    InProgress,
    Done,
    Skipped,
}

impl StepStatus {
    /// The seed's wire name (`steps[].status` in the monitor JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::InProgress => "in_progress",
            StepStatus::Done => "done",
            StepStatus::Skipped => "skipped",
        }
    }

    /// The checkbox marker in the markdown file.
    pub fn marker(self) -> char {
        match self {
            StepStatus::Pending => ' ',
            StepStatus::InProgress => '>',
            StepStatus::Done => 'x',
            StepStatus::Skipped => '-',
        }
    }

    fn from_marker(marker: char) -> Option<StepStatus> {
        Some(match marker {
            ' ' => StepStatus::Pending,
            '>' => StepStatus::InProgress,
            'x' | 'X' => StepStatus::Done,
            '-' => StepStatus::Skipped,
            _ => return None,
        })
    }

    /// Pending or in progress: the work is not finished.
    pub fn is_open(self) -> bool {
        matches!(self, StepStatus::Pending | StepStatus::InProgress)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub id: String,
    pub content: String,
    pub status: StepStatus,
    /// Indented lines under the step (a person's details); they travel with it.
    pub notes: Vec<String>,
}

/// One `- **Key:** value` line of the Metadata section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    Metadata,
    Description,
    Steps,
    Progress,
    LastActivity,
}

impl Known {
    /// The canonical order of the sections in a file we create.
    const ORDER: [Known; 5] = [
        Known::Metadata,
        Known::Description,
        Known::Steps,
        Known::Progress,
        Known::LastActivity,
    ];

    fn heading(self) -> &'static str {
        match self {
            Known::Metadata => "Metadata",
            Known::Description => "Description",
            Known::Steps => "Steps",
            Known::Progress => "Progress",
            Known::LastActivity => "Last Activity",
        }
    }

    fn from_heading(heading: &str) -> Option<Known> {
        Known::ORDER
            .into_iter()
            .find(|known| known.heading().eq_ignore_ascii_case(heading.trim()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Section {
    Known(Known),
    /// A section we do not know, kept verbatim.
    Other {
        heading: String,
        body: Vec<String>,
    },
}

/// A parsed task file. Two documents are equal when they write the same
/// file: a known section that is not in the layout yet but has content
/// counts as present at its canonical place.
#[derive(Debug, Clone, Default)]
pub struct TaskDoc {
    pub id: String,
    pub metadata: Listed<Field>,
    /// Free text, line by line.
    pub description: Vec<String>,
    pub steps: Listed<Step>,
    pub progress: Listed<String>,
    /// The timestamp line; other lines in that section are raw.
    pub last_activity: Listed<String>,
    /// Lines between the title and the first section.
    preamble: Vec<String>,
    layout: Vec<Section>,
}

impl TaskDoc {
    /// A new task file's skeleton, every known section in canonical order
    /// except Steps, which appears once there are steps.
    pub fn new(id: &str) -> TaskDoc {
        TaskDoc {
            id: id.to_string(),
            layout: vec![
                Section::Known(Known::Metadata),
                Section::Known(Known::Description),
                Section::Known(Known::Progress),
                Section::Known(Known::LastActivity),
            ],
            ..TaskDoc::default()
        }
    }

    /// Parses a task file. Nothing is an error: what we do not understand is
    /// kept raw. `fallback_id` names the task when the title line is missing.
    pub fn parse(text: &str, fallback_id: &str) -> TaskDoc {
        let mut doc = TaskDoc {
            id: fallback_id.to_string(),
            ..TaskDoc::default()
        };
        let lines: Vec<&str> = text.lines().collect();
        let mut index = 0;
        // The title: the first non-blank line, when it is `# Task: <id>`.
        while index < lines.len() && lines[index].trim().is_empty() {
            index += 1;
        }
        if let Some(id) = lines
            .get(index)
            .and_then(|line| line.strip_prefix("# Task:"))
            .map(str::trim)
            .filter(|id| !id.is_empty())
        {
            doc.id = id.to_string();
            index += 1;
        }
        let mut preamble = Vec::new();
        while index < lines.len() && !is_section_heading(lines[index]) {
            preamble.push(lines[index].trim_end().to_string());
            index += 1;
        }
        doc.preamble = trim_blank_edges(preamble);
        let mut seen: Vec<Known> = Vec::new();
        while index < lines.len() {
            let heading = lines[index][3..].trim().to_string();
            index += 1;
            let mut body = Vec::new();
            while index < lines.len() && !is_section_heading(lines[index]) {
                body.push(lines[index].trim_end().to_string());
                index += 1;
            }
            let body = trim_blank_edges(body);
            match Known::from_heading(&heading) {
                // A repeated known section is kept as an unknown one: which of
                // the two is "the" section is a person's call, not ours.
                Some(known) if !seen.contains(&known) => {
                    seen.push(known);
                    doc.layout.push(Section::Known(known));
                    doc.fill(known, &body);
                }
                _ => doc.layout.push(Section::Other { heading, body }),
            }
        }
        doc.assign_missing_step_ids();
        doc
    }

    fn fill(&mut self, known: Known, body: &[String]) {
        match known {
            Known::Metadata => self.metadata = Listed::parse(body, parse_field),
            Known::Description => self.description = body.to_vec(),
            Known::Steps => self.steps = parse_steps(body),
            Known::Progress => self.progress = Listed::parse(body, parse_progress),
            Known::LastActivity => {
                let mut taken = false;
                self.last_activity = Listed::parse(body, |line| {
                    if taken || line.trim().is_empty() {
                        return None;
                    }
                    taken = true;
                    Some(line.trim().to_string())
                });
            }
        }
    }

    /// Steps a person wrote without an id, or with an id used twice, get the
    /// next free `sN`, so every step can be named on the command line.
    fn assign_missing_step_ids(&mut self) {
        let mut used: Vec<String> = Vec::new();
        let mut missing = Vec::new();
        for (index, step) in self.steps.items.iter().enumerate() {
            if step.id.is_empty() || used.contains(&step.id) {
                missing.push(index);
            } else {
                used.push(step.id.clone());
            }
        }
        for index in missing {
            let id = next_free_step_id(used.iter().map(String::as_str));
            used.push(id.clone());
            self.steps.items[index].id = id;
        }
    }

    /// The sections in the order they are written: the file's own order,
    /// plus known sections that gained content, at their canonical place.
    fn effective_layout(&self) -> Vec<Section> {
        let mut layout = self.layout.clone();
        for known in Known::ORDER {
            if !layout.contains(&Section::Known(known)) && self.has_content(known) {
                insert_known(&mut layout, known);
            }
        }
        layout
    }

    /// Writes the file.
    pub fn render(&self) -> String {
        let layout = self.effective_layout();
        let mut out: Vec<String> = vec![format!("# Task: {}", self.id), String::new()];
        if !self.preamble.is_empty() {
            out.extend(self.preamble.iter().cloned());
            out.push(String::new());
        }
        for section in &layout {
            let (heading, body) = match section {
                Section::Known(known) => (known.heading().to_string(), self.render_known(*known)),
                Section::Other { heading, body } => (heading.clone(), body.clone()),
            };
            out.push(format!("## {heading}"));
            out.push(String::new());
            if !body.is_empty() {
                out.extend(body);
                out.push(String::new());
            }
        }
        while out.last().is_some_and(String::is_empty) {
            out.pop();
        }
        let mut text = out.join("\n");
        text.push('\n');
        text
    }

    fn has_content(&self, known: Known) -> bool {
        match known {
            Known::Metadata => !self.metadata.is_empty(),
            Known::Description => !self.description.is_empty(),
            Known::Steps => !self.steps.is_empty(),
            Known::Progress => !self.progress.is_empty(),
            Known::LastActivity => !self.last_activity.is_empty(),
        }
    }

    fn render_known(&self, known: Known) -> Vec<String> {
        let mut out = Vec::new();
        match known {
            Known::Metadata => self.metadata.render(&mut out, |field, out| {
                if field.value.is_empty() {
                    out.push(format!("- **{}:**", field.key));
                } else {
                    out.push(format!("- **{}:** {}", field.key, field.value));
                }
            }),
            Known::Description => out.extend(self.description.iter().cloned()),
            Known::Steps => self.steps.render(&mut out, |step, out| {
                out.push(format!(
                    "- [{}] ({}) {}",
                    step.status.marker(),
                    step.id,
                    step.content
                ));
                out.extend(step.notes.iter().cloned());
            }),
            Known::Progress => self
                .progress
                .render(&mut out, |line, out| out.push(format!("- {line}"))),
            Known::LastActivity => self
                .last_activity
                .render(&mut out, |line, out| out.push(line.clone())),
        }
        out
    }

    /// A metadata value by key (case-insensitive), e.g. `Status`.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.metadata
            .items()
            .iter()
            .find(|field| field.key.eq_ignore_ascii_case(key))
            .map(|field| field.value.as_str())
    }

    /// Sets a metadata value, adding the field at the end when it is new.
    pub fn set_field(&mut self, key: &str, value: &str) {
        let value = one_line(value);
        match self
            .metadata
            .items_mut()
            .iter_mut()
            .find(|field| field.key.eq_ignore_ascii_case(key))
        {
            Some(field) => field.value = value,
            None => self.metadata.push(Field {
                key: key.to_string(),
                value,
            }),
        }
    }

    pub fn description_text(&self) -> String {
        self.description.join("\n")
    }

    /// Sets the description; lines that would read as a section heading are
    /// indented by one space so they stay description.
    pub fn set_description(&mut self, text: &str) {
        let lines: Vec<String> = text
            .trim()
            .lines()
            .map(|line| {
                let line = line.trim_end();
                if is_section_heading(line) || line.starts_with("# ") {
                    format!(" {line}")
                } else {
                    line.to_string()
                }
            })
            .collect();
        self.description = trim_blank_edges(lines);
    }

    /// Appends a progress line; empty text adds nothing (a bare `- ` would
    /// read back as a free line, not as progress).
    pub fn add_progress(&mut self, text: &str) {
        let line = one_line(text);
        if !line.is_empty() {
            self.progress.push(line);
        }
    }

    pub fn last_activity(&self) -> Option<&str> {
        self.last_activity.items().first().map(String::as_str)
    }

    pub fn set_last_activity(&mut self, stamp: &str) {
        if self.last_activity.is_empty() {
            self.last_activity.push(stamp.to_string());
        } else {
            self.last_activity.items_mut()[0] = stamp.to_string();
        }
    }

    pub fn steps(&self) -> &[Step] {
        self.steps.items()
    }

    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.items().iter().find(|step| step.id == id)
    }
}

impl PartialEq for TaskDoc {
    fn eq(&self, other: &TaskDoc) -> bool {
        self.id == other.id
            && self.metadata == other.metadata
            && self.description == other.description
            && self.steps == other.steps
            && self.progress == other.progress
            && self.last_activity == other.last_activity
            && self.preamble == other.preamble
            && self.effective_layout() == other.effective_layout()
    }
}

impl Eq for TaskDoc {}

fn is_section_heading(line: &str) -> bool {
    line.starts_with("## ") || line == "##"
}

fn insert_known(layout: &mut Vec<Section>, known: Known) {
    let rank = |k: Known| Known::ORDER.iter().position(|o| *o == k).unwrap_or(0);
    // After the last known section that comes before it canonically, else
    // before the first known section, else at the end.
    let after = layout.iter().rposition(|section| match section {
        Section::Known(other) => rank(*other) < rank(known),
        Section::Other { .. } => false,
    });
    let at = match after {
        Some(index) => index + 1,
        None => layout
            .iter()
            .position(|section| matches!(section, Section::Known(_)))
            .unwrap_or(layout.len()),
    };
    layout.insert(at, Section::Known(known));
}

fn trim_blank_edges(mut lines: Vec<String>) -> Vec<String> {
    while lines.last().is_some_and(|line| line.trim().is_empty()) {
        lines.pop();
    }
    let first = lines
        .iter()
        .position(|line| !line.trim().is_empty())
        .unwrap_or(lines.len());
    lines.drain(..first);
    lines
}

/// Text that goes on one markdown line: newlines become spaces, edges trimmed.
pub fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The next `sN` not in `used`: one past the highest number in use.
pub fn next_free_step_id<'a>(used: impl Iterator<Item = &'a str>) -> String {
    let highest = used
        .filter_map(|id| id.strip_prefix('s').and_then(|n| n.parse::<u64>().ok()))
        .max()
        .unwrap_or(0);
    format!("s{}", highest + 1)
}

fn parse_field(line: &str) -> Option<Field> {
    let rest = line.strip_prefix("- **")?;
    let (key, value) = rest.split_once(":**")?;
    if key.is_empty() || key.contains("**") {
        return None;
    }
    Some(Field {
        key: key.to_string(),
        value: value.trim().to_string(),
    })
}

fn parse_progress(line: &str) -> Option<String> {
    let text = line.strip_prefix("- ")?.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// Steps, with indented lines under a step kept as its notes.
fn parse_steps(body: &[String]) -> Listed<Step> {
    let mut listed: Listed<Step> = Listed::default();
    for line in body {
        if let Some(step) = parse_step_line(line) {
            listed.items.push(step);
            listed.layout.push(Slot::Item);
            continue;
        }
        let indented = line.starts_with([' ', '\t']) && !line.trim().is_empty();
        if indented
            && listed.layout.last() == Some(&Slot::Item)
            && let Some(step) = listed.items.last_mut()
        {
            step.notes.push(line.clone());
            continue;
        }
        listed.layout.push(Slot::Raw(line.clone()));
    }
    listed
}

/// `- [m] (id) content`, also `*` bullets and steps without an id (a person
/// adding a step by hand); the id is then assigned after parsing.
fn parse_step_line(line: &str) -> Option<Step> {
    let rest = line
        .strip_prefix("- [")
        .or_else(|| line.strip_prefix("* ["))?;
    let mut chars = rest.chars();
    let marker = chars.next()?;
    let status = StepStatus::from_marker(marker)?;
    let rest = chars.as_str().strip_prefix("] ")?;
    let (id, content) = match rest.strip_prefix('(').and_then(|r| r.split_once(") ")) {
        Some((id, content)) if is_step_id(id) => (id.to_string(), content),
        _ => (String::new(), rest),
    };
    let content = content.trim();
    if content.is_empty() {
        return None;
    }
    Some(Step {
        id,
        content: content.to_string(),
        status,
        notes: Vec::new(),
    })
}

fn is_step_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 32
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED_SAMPLE: &str = "# Task: task_steps_test

## Metadata

- **Status:** in_progress
- **Priority:** high
- **Created:** 2026-02-13T12:00:00.000Z

## Description

OAuth 로그인 구현

## Steps

- [x] (s1) 기존 auth 구조 파악
- [>] (s2) Google OAuth strategy 추가
- [ ] (s3) GitHub OAuth callback 구현
- [-] (s4) 건너뛴 단계

## Progress

- Task started
- [s1] 기존 auth 구조 분석 완료

## Last Activity

2026-02-13T12:30:00.000Z
";

    #[test]
    fn parses_the_seed_sample() {
        let doc = TaskDoc::parse(SEED_SAMPLE, "fallback");
        assert_eq!(doc.id, "task_steps_test");
        assert_eq!(doc.field("status"), Some("in_progress"));
        assert_eq!(doc.field("Priority"), Some("high"));
        assert_eq!(doc.description_text(), "OAuth 로그인 구현");
        let got: Vec<(&str, &str, StepStatus)> = doc
            .steps()
            .iter()
            .map(|s| (s.id.as_str(), s.content.as_str(), s.status))
            .collect();
        assert_eq!(
            got,
            vec![
                ("s1", "기존 auth 구조 파악", StepStatus::Done),
                ("s2", "Google OAuth strategy 추가", StepStatus::InProgress),
                ("s3", "GitHub OAuth callback 구현", StepStatus::Pending),
                ("s4", "건너뛴 단계", StepStatus::Skipped),
            ]
        );
        assert_eq!(
            doc.progress.items(),
            ["Task started", "[s1] 기존 auth 구조 분석 완료"]
        );
        assert_eq!(doc.last_activity(), Some("2026-02-13T12:30:00.000Z"));
        assert_eq!(doc.render(), SEED_SAMPLE);
    }

    #[test]
    fn keeps_what_a_person_added() {
        let text = "# Task: t1

A line above the sections.

## Metadata

- **Status:** in_progress
- **Owner:** ana
a free line

## Steps

Intro to the steps.

- [x] (s1) first
  - detail of s1
- [ ] second, added by hand
- [ ] (s1) duplicate id

Closing remark.

## Notes

Anything at all.
### Sub heading

## Progress

- started
free text between items
- more

## Last Activity

2026-01-01T00:00:00.000Z
trailing note
";
        let mut doc = TaskDoc::parse(text, "x");
        assert_eq!(doc.steps()[0].notes, vec!["  - detail of s1".to_string()]);
        assert_eq!(doc.steps()[1].id, "s2");
        assert_eq!(doc.steps()[2].id, "s3");
        doc.steps.push(Step {
            id: "s4".into(),
            content: "new".into(),
            status: StepStatus::Pending,
            notes: vec![],
        });
        doc.add_progress("third");
        doc.set_field("Status", "completed");
        let out = doc.render();
        for kept in [
            "A line above the sections.",
            "- **Owner:** ana",
            "a free line",
            "Intro to the steps.",
            "  - detail of s1",
            "Closing remark.",
            "## Notes",
            "Anything at all.",
            "### Sub heading",
            "free text between items",
            "trailing note",
        ] {
            assert!(out.contains(kept), "lost {kept:?}:\n{out}");
        }
        assert!(out.contains("- [ ] (s4) new\n\nClosing remark."), "{out}");
        assert!(out.contains("- more\n- third"), "{out}");
        assert_eq!(TaskDoc::parse(&out, "x").render(), out);
    }

    #[test]
    fn steps_section_is_added_in_canonical_place() {
        let mut doc = TaskDoc::new("t");
        doc.set_field("Status", "in_progress");
        doc.set_description("d");
        doc.add_progress("Task started");
        doc.steps.replace_all(vec![Step {
            id: "s1".into(),
            content: "a".into(),
            status: StepStatus::InProgress,
            notes: vec![],
        }]);
        let out = doc.render();
        let steps_at = out.find("## Steps").unwrap();
        assert!(out.find("## Description").unwrap() < steps_at);
        assert!(steps_at < out.find("## Progress").unwrap());
        assert_eq!(TaskDoc::parse(&out, "elsewhere"), doc);
    }

    /// Found by the round-trip property: `- ` alone reads back as a free line.
    #[test]
    fn empty_progress_adds_nothing() {
        let mut doc = TaskDoc::new("t");
        doc.add_progress(" \n ");
        assert!(doc.progress.is_empty());
        assert_eq!(TaskDoc::parse(&doc.render(), "t"), doc);
    }

    #[test]
    fn description_cannot_open_a_section() {
        let mut doc = TaskDoc::new("t");
        doc.set_description("line one\n## not a heading");
        let reparsed = TaskDoc::parse(&doc.render(), "t");
        assert_eq!(reparsed.description, doc.description);
    }
}

//! Many files' diagnostics from one server at once: the way a project
//! check asks, instead of one file after another.
//!
//! One file at a time costs a round trip and a quiet window per file (about
//! 0.16 s each, whatever the server); asking for all of them at once costs
//! what the server needs to check them, as its own command line does
//! (`shared/reference/language-servers.md`, "Whole-project diagnostics").
//! How, by what the server offers:
//! - **pull** (`textDocument/diagnostic`: ty, TypeScript 7, pyright with
//!   dynamic registration, ruff): each file is opened just before its pull
//!   and the pulls are pipelined, [`PULL_WINDOW`] in flight; a pull the
//!   server cancels is asked again, and `workspace/diagnostic/refresh`
//!   makes every answer so far stale, so those files are pulled again;
//! - **push** (typescript-language-server, clangd, gopls, rust-analyzer):
//!   every file is opened (or changed) at once, and the batch is done when
//!   each has a publish for its text and the server has been quiet for its
//!   quiet window, with no work-done progress open — one settle per batch.
//!
//! Results are kept per file with the text they describe and the server's
//! change count ([`Client`]'s `changes`) when they were taken: a file whose
//! text and server are unchanged since is answered from that result at no
//! cost; after any change, pulled files are pulled again (a change in one
//! file can change another's diagnostics: `interFileDependencies`), and for
//! push servers the latest publish after the quiet window stands.
//!
//! A batch is a state the client keeps between calls: the daemon runs it in
//! steps, answers whoever waits for some of its files as they finish, and
//! lets it run on after a caller stopped waiting, so no work is thrown away.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lsp_server::RequestId;
use serde_json::{Value, json};

use super::{Client, LspError, ServerDiagnostic, SettledResult};
use crate::lsp::uri;
use crate::util::fsread::{self, Links, limits};
use crate::util::text::fnv1a;

/// How soon to look again when only a message can change anything.
const IDLE_LOOK: Duration = Duration::from_millis(200);

/// Pulls in flight at once: enough to keep a multi-threaded server busy,
/// few enough that a cancelled batch leaves little queued in the server.
pub const PULL_WINDOW: usize = 64;

/// One file to check, and its LSP language id (sent with `didOpen`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchFile {
    pub path: PathBuf,
    pub language_id: String,
}

/// What a batch knows about one file.
#[derive(Debug, Clone, PartialEq)]
pub enum FileAnswer {
    Diagnostics(Vec<ServerDiagnostic>),
    /// This file could not be checked (unreadable, the server refused it);
    /// the server is fine.
    Failed(String),
    /// Not answered yet.
    Pending,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// To be opened (or changed) and, for a pull server, pulled.
    Queued,
    /// Sent; waiting for its pull answer or publish.
    Sent,
    /// Unchanged, on a push server that received other changes: its latest
    /// publish once the server is quiet stands.
    Refresh,
    Done,
    Failed,
}

#[derive(Debug)]
struct Tracked {
    language_id: String,
    stage: Stage,
    /// The document version and when it was sent, for accepting publishes.
    version: i32,
    sent_at: Option<Instant>,
    /// The hash of the text sent for this check.
    text_hash: u64,
    /// A pull answered after a refresh was requested must be asked again.
    stale: bool,
    /// The `previousResultId` its pull in flight carries.
    previous_result_id: Option<String>,
    /// An "unchanged" came back for a result this client no longer keeps:
    /// the next pull asks in full.
    pull_in_full: bool,
    failure: Option<String>,
}

/// A batch in progress on one client.
#[derive(Debug, Default)]
pub struct Batch {
    /// The files, by comparable path, in the order they were added.
    order: Vec<PathBuf>,
    files: HashMap<PathBuf, Tracked>,
    queue: VecDeque<PathBuf>,
    pulls: HashMap<RequestId, PathBuf>,
    /// When the last text was sent (push: publishes before it are old).
    last_send: Option<Instant>,
    /// The awaited progress (rust-analyzer's "cargo check") has run since
    /// the last text was sent.
    awaited_progress_done: bool,
    /// A push batch: every file answered and the server quiet since.
    settled: bool,
}

/// A batch's progress, for people watching a long check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchProgress {
    pub total: usize,
    pub done: usize,
}

impl Batch {
    pub fn progress(&self) -> BatchProgress {
        BatchProgress {
            total: self.order.len(),
            done: self
                .files
                .values()
                .filter(|t| matches!(t.stage, Stage::Done | Stage::Failed))
                .count(),
        }
    }
}

impl Client {
    /// Adds `files` to the batch (starting one when none runs): each is
    /// answered from its kept result when neither its text nor the server
    /// changed since, else queued to be sent. Files already in the batch are
    /// looked at again (their text may have changed).
    pub fn batch_add(&mut self, files: &[BatchFile]) {
        self.pump_idle();
        let mut batch = self.batch.take().unwrap_or_default();
        // Read every file first: one that changed on the disk since the last
        // batch saw it changes the server's view (it may have read the old
        // text itself), so no earlier result may be reused.
        let mut read = Vec::with_capacity(files.len());
        let mut moved_on_disk = false;
        for file in files {
            let key = uri::comparable(&file.path);
            let hash = read_source(&key).map(|text| fnv1a(text.as_bytes()));
            if let Ok(hash) = hash
                && let Some(previous) = self.seen_on_disk.insert(key.clone(), hash)
                && previous != hash
                && self.sent_texts.get(&key) != Some(&hash)
            {
                moved_on_disk = true;
            }
            read.push((key, &file.language_id, hash));
        }
        if moved_on_disk {
            self.changes += 1;
        }
        batch.settled = false;
        for (key, language_id, hash) in read {
            let disk_hash = match hash {
                Ok(hash) => hash,
                Err(why) => {
                    batch.track_failed(key, language_id, why);
                    continue;
                }
            };
            let in_batch = batch.files.get(&key).map(|t| (t.stage, t.text_hash));
            if let Some((Stage::Done | Stage::Sent | Stage::Queued, hash)) = in_batch
                && hash == disk_hash
                && !moved_on_disk
            {
                // Already answered or on its way for this very text.
                continue;
            }
            let current = self
                .results
                .get(&key)
                .is_some_and(|r| r.text_hash == disk_hash && r.epoch == self.changes)
                && self.sent_texts.get(&key) == Some(&disk_hash);
            if !batch.files.contains_key(&key) {
                batch.order.push(key.clone());
            }
            let stage = if current {
                Stage::Done
            } else {
                batch.queue.push_back(key.clone());
                Stage::Queued
            };
            batch.files.insert(
                key,
                Tracked {
                    language_id: language_id.clone(),
                    stage,
                    version: 0,
                    sent_at: None,
                    text_hash: disk_hash,
                    stale: false,
                    previous_result_id: None,
                    pull_in_full: false,
                    failure: None,
                },
            );
        }
        self.batch = Some(batch);
    }

    /// Works on the batch until it is done or `until` passes: sends what
    /// the window allows, takes in answers, settles. A server that exits,
    /// or says nothing at all for `silence` while files wait for it (hung),
    /// is an error.
    pub fn batch_step(&mut self, until: Instant, silence: Duration) -> Result<(), LspError> {
        loop {
            self.batch_send();
            if let Some(why) = &self.exited {
                let error = LspError::Exited {
                    during: "a project check".into(),
                    detail: format!("{why}{}", self.detail()),
                };
                return Err(error);
            }
            // Silent since it last heard from the server *and* since the
            // batch last sent it something: a server idle for minutes
            // before this batch has not been silent about it (a warm ty
            // asked after 2 idle minutes was stopped as hung at once).
            let last_send = self.batch.as_ref().and_then(|batch| batch.last_send);
            let quiet_for =
                last_send.map_or(Duration::ZERO, |sent| self.last_heard().max(sent).elapsed());
            if quiet_for >= silence && !self.batch_done() {
                self.keep_after_timeout();
                self.responsive = false;
                let progress = self.batch_progress();
                return Err(LspError::Timeout {
                    waiting_for: format!(
                        "the diagnostics of {} file(s) (the server said nothing at all meanwhile)",
                        progress.total - progress.done
                    ),
                    after: quiet_for,
                    detail: self.detail(),
                });
            }
            let now = Instant::now();
            let wake = match self.batch_settle(now) {
                None => return Ok(()),
                Some(wake) => wake.min(until),
            };
            if now >= until {
                return Ok(());
            }
            self.pump(wake);
        }
    }

    /// Whether the batch has nothing left to do.
    pub fn batch_done(&self) -> bool {
        self.batch.as_ref().is_none_or(|batch| {
            (self.pull || batch.settled)
                && batch
                    .files
                    .values()
                    .all(|t| matches!(t.stage, Stage::Done | Stage::Failed))
        })
    }

    pub fn batch_progress(&self) -> BatchProgress {
        self.batch.as_ref().map(Batch::progress).unwrap_or_default()
    }

    /// The answer for `path` so far: its result once settled, else pending.
    pub fn batch_answer(&self, path: &Path) -> FileAnswer {
        let key = uri::comparable(path);
        let Some(batch) = &self.batch else {
            return FileAnswer::Pending;
        };
        match batch.files.get(&key) {
            // A server that could not read its configuration answers
            // with nothing or with its defaults (see `Client::diagnose`).
            Some(Tracked {
                stage: Stage::Done, ..
            }) if let Some(line) = self.transport.config_error() => FileAnswer::Failed(format!(
                "the server could not read its configuration: {}",
                crate::util::text::escape_controls(&line)
            )),
            Some(Tracked {
                stage: Stage::Done, ..
            }) => self
                .results
                .get(&key)
                .map(|r| FileAnswer::Diagnostics(r.diagnostics.clone()))
                .unwrap_or(FileAnswer::Pending),
            Some(Tracked {
                stage: Stage::Failed,
                failure,
                ..
            }) => FileAnswer::Failed(failure.clone().unwrap_or_default()),
            _ => FileAnswer::Pending,
        }
    }

    /// Ends the batch; its results stay kept for the next one.
    pub fn batch_end(&mut self) {
        if let Some(batch) = self.batch.take() {
            // Pulls still in flight are answered into the void: forget them
            // so their answers are not taken for anything else.
            for id in batch.pulls.into_keys() {
                self.forget_response(id);
            }
        }
    }

    /// Whether a batch is running (the daemon keeps one going between jobs).
    pub fn batch_running(&self) -> bool {
        self.batch.is_some()
    }

    /// A whole batch in one call: every file's answer when done or at
    /// `deadline` (pending files are [`FileAnswer::Pending`]).
    pub fn diagnose_batch(
        &mut self,
        files: &[BatchFile],
        deadline: Instant,
    ) -> Result<Vec<(PathBuf, FileAnswer)>, LspError> {
        self.last_used = Instant::now();
        self.batch_add(files);
        let stepped = self.batch_step(deadline, deadline.saturating_duration_since(Instant::now()));
        let answers = files
            .iter()
            .map(|file| (file.path.clone(), self.batch_answer(&file.path)))
            .collect();
        self.batch_end();
        self.last_used = Instant::now();
        stepped.map(|()| answers)
    }

    /// Sends queued files while the window allows: a pull server gets the
    /// file's text and its pull; a push server gets every text at once.
    fn batch_send(&mut self) {
        let Some(mut batch) = self.batch.take() else {
            return;
        };
        let pull = self.pull;
        let changes_before = self.changes;
        while let Some(key) = batch.queue.front().cloned() {
            if pull && batch.pulls.len() >= PULL_WINDOW {
                break;
            }
            batch.queue.pop_front();
            let Some(tracked) = batch.files.get_mut(&key) else {
                continue;
            };
            if tracked.stage != Stage::Queued {
                continue;
            }
            let text = match read_source(&key) {
                Ok(text) => text,
                Err(why) => {
                    tracked.stage = Stage::Failed;
                    tracked.failure = Some(why);
                    continue;
                }
            };
            let language_id = tracked.language_id.clone();
            let hash = fnv1a(text.as_bytes());
            tracked.text_hash = hash;
            let has_text = self.sent_texts.get(&key) == Some(&hash);
            let has_answer = self.results.contains_key(&key) || self.publishes.contains_key(&key);
            // A result from before files changed on the disk behind the
            // server's back: waiting for a re-publish would trust the server
            // to notice the change on its own, in time; a fresh open makes
            // it publish for this very version.
            let before_outside_change = self
                .results
                .get(&key)
                .is_some_and(|r| r.epoch < self.outside_epoch);
            if !pull && has_text && has_answer && !before_outside_change {
                // A push server re-publishes what changes on its own: this
                // file's latest publish after the quiet window stands.
                let tracked = batch.files.get_mut(&key).expect("tracked above");
                tracked.stage = Stage::Refresh;
                continue;
            }
            if !has_text || !pull {
                if has_text {
                    // Open with this text but never answered (or answered
                    // before an outside change): a fresh open makes a push
                    // server publish.
                    self.close_document(&key);
                }
                self.send_text(&key, &text, &language_id);
            }
            drop(text);
            let tracked = batch.files.get_mut(&key).expect("tracked above");
            tracked.version = self.documents.get(&key).copied().unwrap_or(0);
            tracked.sent_at = Some(Instant::now());
            tracked.stage = Stage::Sent;
            tracked.stale = false;
            batch.last_send = Some(Instant::now());
            if pull {
                let tracked = batch.files.get_mut(&key).expect("tracked above");
                let previous = if std::mem::take(&mut tracked.pull_in_full) {
                    None
                } else {
                    self.results.get(&key).and_then(|r| r.result_id.clone())
                };
                let params = self.pull_params(&uri::from_path(&key), previous.as_deref());
                tracked.previous_result_id = previous;
                let id = self.request("textDocument/diagnostic", params);
                batch.pulls.insert(id, key);
            }
        }
        if self.changes != changes_before {
            batch.settled = false;
            batch.awaited_progress_done = false;
            // A change can move other files' diagnostics
            // (`interFileDependencies`): a pull server is asked again about
            // the files answered before it; a push server re-publishes them
            // itself, and their latest publish after the quiet window stands.
            let answered: Vec<PathBuf> = batch
                .order
                .iter()
                .filter(|key| {
                    batch
                        .files
                        .get(*key)
                        .is_some_and(|t| t.stage == Stage::Done)
                })
                .cloned()
                .collect();
            for key in answered {
                let tracked = batch.files.get_mut(&key).expect("listed above");
                if pull {
                    tracked.stage = Stage::Queued;
                    batch.queue.push_back(key);
                } else if self.documents.contains_key(&key) {
                    tracked.stage = Stage::Refresh;
                }
            }
        }
        self.batch = Some(batch);
    }

    /// `None` when the batch is settled (results stored); else when to look
    /// again at the latest.
    fn batch_settle(&mut self, now: Instant) -> Option<Instant> {
        let quiet = self.launch.quiet;
        let open_progress = !self.progress.is_empty();
        let awaited = self.launch.await_progress.is_some();
        let epoch = self.changes;
        let batch = self.batch.as_mut()?;
        if self.pull {
            let waiting = batch
                .files
                .values()
                .any(|t| matches!(t.stage, Stage::Queued | Stage::Sent));
            return waiting.then_some(now + Duration::from_millis(200));
        }
        // Push: a file is answered by a publish for its text once nothing
        // newer came for the quiet window (three times that for a first
        // empty, version-less publish: typescript-language-server's "nothing
        // yet"), so callers get each file as soon as it is final.
        let progress_pending = open_progress || (awaited && !batch.awaited_progress_done);
        let mut wake: Option<Instant> = None;
        let mut waiting = false;
        for (key, tracked) in batch.files.iter_mut() {
            match tracked.stage {
                Stage::Queued => return Some(now),
                Stage::Sent => {}
                _ => continue,
            }
            waiting = true;
            let Some(publish) = self
                .publishes
                .get(key)
                .filter(|publish| publish_accepted(publish, tracked))
            else {
                wake = Some(wake.map_or(now + IDLE_LOOK, |w| w.min(now + IDLE_LOOK)));
                continue;
            };
            let provisional = publish.version.is_none() && publish.diagnostics.is_empty();
            let ready_at = publish.at + if provisional { quiet * 3 } else { quiet };
            if now >= ready_at && !progress_pending {
                tracked.stage = Stage::Done;
                self.results.insert(
                    key.clone(),
                    SettledResult {
                        text_hash: tracked.text_hash,
                        at: publish.at,
                        epoch,
                        diagnostics: publish.diagnostics.clone(),
                        result_id: None,
                    },
                );
            } else {
                let at = if progress_pending {
                    now + IDLE_LOOK
                } else {
                    ready_at
                };
                wake = Some(wake.map_or(at, |w| w.min(at)));
            }
        }
        if waiting && batch.files.values().any(|t| t.stage == Stage::Sent) {
            return Some(wake.unwrap_or(now + IDLE_LOOK));
        }
        if batch.settled {
            return None;
        }
        // Every sent file is answered; the files that were not sent (and
        // late re-publishes of those that were) need the server quiet.
        // A batch that sent nothing itself (its files were sent before, and
        // only changes elsewhere make them worth another look) waits for
        // the quiet after the last change sent to the server.
        let mut last_activity = batch.last_send.or(self.last_change_at).unwrap_or(now);
        for publish in self.publishes.values() {
            last_activity = last_activity.max(publish.at);
        }
        if let Some(end) = self.last_progress_end {
            last_activity = last_activity.max(end);
        }
        if progress_pending {
            return Some(now + IDLE_LOOK);
        }
        if now < last_activity + quiet {
            return Some(last_activity + quiet);
        }
        // Settled: every file's latest publish stands, or its result when
        // the server published nothing newer for it.
        for (key, tracked) in batch.files.iter_mut() {
            if !matches!(tracked.stage, Stage::Done | Stage::Refresh) {
                continue;
            }
            let refresh = tracked.stage == Stage::Refresh;
            tracked.stage = Stage::Done;
            let newer = match (self.publishes.get(key), self.results.get(key)) {
                (Some(publish), Some(result)) if publish.at > result.at => Some(publish),
                (Some(publish), None) if refresh => Some(publish),
                _ => None,
            };
            if let Some(publish) = newer {
                self.results.insert(
                    key.clone(),
                    SettledResult {
                        text_hash: tracked.text_hash,
                        at: publish.at,
                        epoch,
                        diagnostics: publish.diagnostics.clone(),
                        result_id: None,
                    },
                );
            } else if let Some(result) = self.results.get_mut(key) {
                result.epoch = epoch;
            }
        }
        batch.settled = true;
        self.analysed = true;
        None
    }

    /// A pull answer for a batch file (called from the client's pump).
    pub(super) fn batch_pull_answered(
        &mut self,
        id: &RequestId,
        result: Result<Value, (i32, String, bool)>,
    ) -> bool {
        let epoch = self.changes;
        let Some(batch) = self.batch.as_mut() else {
            return false;
        };
        let Some(key) = batch.pulls.remove(id) else {
            return false;
        };
        let Some(tracked) = batch.files.get_mut(&key) else {
            return true;
        };
        match result {
            Err((code, message, retrigger)) => {
                if retrigger && (code == SERVER_CANCELLED || code == CONTENT_MODIFIED) {
                    tracked.stage = Stage::Queued;
                    batch.queue.push_front(key);
                } else {
                    tracked.stage = Stage::Failed;
                    tracked.failure = Some(format!(
                        "the server refused textDocument/diagnostic: {}",
                        message.split_whitespace().collect::<Vec<_>>().join(" ")
                    ));
                }
            }
            Ok(result) => {
                if tracked.stale {
                    tracked.stale = false;
                    tracked.stage = Stage::Queued;
                    batch.queue.push_back(key);
                    return true;
                }
                let result_id = result
                    .get("resultId")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let items = match result.get("kind").and_then(Value::as_str) {
                    Some("unchanged") => {
                        // "Unchanged" from the result this pull named; a
                        // pull that named none, or a result replaced since,
                        // leaves nothing to stand on: ask in full.
                        let kept = self.results.get(&key).filter(|kept| {
                            tracked.previous_result_id.is_some()
                                && kept.result_id == tracked.previous_result_id
                        });
                        match kept {
                            Some(kept) => kept.diagnostics.clone(),
                            None => {
                                tracked.pull_in_full = true;
                                tracked.stage = Stage::Queued;
                                batch.queue.push_back(key);
                                return true;
                            }
                        }
                    }
                    _ => super::parse_diagnostics(result.get("items")),
                };
                tracked.stage = Stage::Done;
                self.results.insert(
                    key,
                    SettledResult {
                        text_hash: tracked.text_hash,
                        at: Instant::now(),
                        epoch,
                        diagnostics: items,
                        result_id,
                    },
                );
            }
        }
        true
    }

    /// `workspace/diagnostic/refresh`: what was pulled so far may be stale.
    pub(super) fn batch_refresh(&mut self) {
        let Some(batch) = self.batch.as_mut() else {
            return;
        };
        for key in batch.order.clone() {
            let Some(tracked) = batch.files.get_mut(&key) else {
                continue;
            };
            match tracked.stage {
                Stage::Done => {
                    tracked.stage = Stage::Queued;
                    batch.queue.push_back(key);
                }
                Stage::Sent => tracked.stale = true,
                _ => {}
            }
        }
    }

    /// Files changed on the disk by someone else: every answer of the
    /// running batch so far may be stale, so each file is asked again (a
    /// push server's latest publish after the quiet window stands).
    pub(super) fn batch_outside_change(&mut self) {
        self.batch_refresh();
        if let Some(batch) = self.batch.as_mut() {
            batch.settled = false;
            batch.awaited_progress_done = false;
            // The quiet window counts from the news, not from older sends.
            batch.last_send = Some(Instant::now());
        }
    }

    /// The awaited progress (rust-analyzer's "cargo check") ended.
    pub(super) fn batch_progress_ended(&mut self) {
        if let Some(batch) = self.batch.as_mut() {
            batch.awaited_progress_done = true;
        }
    }

    fn pull_params(&self, document_uri: &str, previous_result_id: Option<&str>) -> Value {
        let mut params = json!({"textDocument": {"uri": document_uri}});
        if let Some(previous) = previous_result_id {
            params["previousResultId"] = json!(previous);
        }
        // No null fields: tsgo rejects `"identifier": null` (reference §4).
        if let Some(identifier) = self.pull_identifier() {
            params["identifier"] = json!(identifier);
        }
        params
    }
}

impl Batch {
    fn track_failed(&mut self, key: PathBuf, language_id: &str, why: String) {
        if !self.files.contains_key(&key) {
            self.order.push(key.clone());
        }
        self.files.insert(
            key,
            Tracked {
                language_id: language_id.to_string(),
                stage: Stage::Failed,
                version: 0,
                sent_at: None,
                text_hash: 0,
                stale: false,
                previous_result_id: None,
                pull_in_full: false,
                failure: Some(why),
            },
        );
    }
}

/// `ServerCancelled` (LSP 3.17) and `ContentModified`: ask again.
const SERVER_CANCELLED: i32 = -32802;
const CONTENT_MODIFIED: i32 = -32801;

fn publish_accepted(publish: &super::Publish, tracked: &Tracked) -> bool {
    match publish.version {
        Some(version) => version == tracked.version,
        None => tracked.sent_at.is_some_and(|sent| publish.at >= sent),
    }
}

/// A source file's text, or why it cannot be checked.
fn read_source(path: &Path) -> Result<String, String> {
    match fsread::read_text(path, limits::SOURCE, Links::Follow) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Err("it vanished while checking".into()),
        Err(error) => Err(format!("cannot read it: {}", error.reason())),
    }
}

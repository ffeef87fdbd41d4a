//! After a Write, Edit or MultiEdit: the file's diagnostics from its
//! language server (and ast-grep), each marked as introduced by this edit or
//! already there, as `additionalContext`; during a running loop, a block
//! when the edit introduced errors.
//!
//! "Already there" needs the diagnostics of the text before the edit. They
//! come from `diagnostics.json` when it holds a result for exactly that text;
//! otherwise, for servers that read the open buffer (all but rust-analyzer,
//! whose cargo check reads the disk), the old text is checked first on the
//! same server and the new text sent as a change — one server start, two
//! results.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::ast_grep;
use super::baseline::{self, FileEntry, content_hash};
use super::classify::{Classification, Origin, classify};
use super::lines::LineMap;
use super::report;
use crate::engine::listing::Caps;
use crate::engine::model::{Diag, Severity};
use crate::engine::resolve::{self, Resolved};
use crate::engine::settings::{BlockOn, Settings};
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{Decision, EventName, HookOutput, ToolInput, cap_chars};
use crate::lsp::LspError;
use crate::lsp::pool::Limits;
use crate::ralph::loop_ctl::{self, Ownership};
use crate::ralph::loop_state::{LOOP_FILE, LoopState};
use crate::util::fsread::{self, Links, limits};

/// The share of a file's deadline the old text's check may use.
const BASELINE_SHARE: f64 = 0.6;

pub fn after_edit(ctx: &Ctx, tool: &ToolInput) -> anyhow::Result<HookOutput> {
    if !matches!(tool.tool_name.as_str(), "Write" | "Edit" | "MultiEdit") {
        return Ok(HookOutput::silent());
    }
    let Some(file_path) = tool
        .input_str("file_path")
        .or_else(|| tool.tool_response.get("filePath").and_then(Value::as_str))
    else {
        ctx.debug(format_args!(
            "no file_path in the tool input: nothing to check"
        ));
        return Ok(HookOutput::silent());
    };
    let path = resolve::absolute(ctx, file_path);
    let settings = Settings::load(ctx);
    if !settings.config.enabled {
        ctx.debug(format_args!("diagnostics are turned off in the config"));
        return Ok(HookOutput::silent());
    }
    // Shown to Claude: a newline in a file name must not start a line.
    let display =
        crate::util::text::escape_controls(&resolve::display_path(ctx, &path)).into_owned();
    let target = match resolve::resolve(ctx, &settings, &path) {
        Resolved::Unsupported => {
            ctx.debug(format_args!(
                "{display}: no language server handles this file type"
            ));
            return Ok(HookOutput::silent());
        }
        Resolved::Skipped(why) => {
            ctx.debug(format_args!("{display}: not checked ({why})"));
            return Ok(HookOutput::silent());
        }
        Resolved::NotInstalled {
            language,
            tried,
            hint,
        } => return not_installed(ctx, &language, &tried, &hint),
        Resolved::Target(target) => target,
    };
    // The edited path comes from input: it may be a FIFO or a link to a
    // device by now. The shared reader refuses those at once.
    let text = match fsread::read_text(&path, limits::SOURCE, Links::Follow) {
        Ok(Some(text)) => text,
        Ok(None) => {
            ctx.debug(format_args!("{display}: gone: nothing to check"));
            return Ok(HookOutput::silent());
        }
        // Too large to check is not clean: the loop keeps it among its
        // touched files (its Stop check says inconclusive) and Claude is told.
        Err(fsread::ReadError::TooLarge { .. }) => {
            record_touched(ctx, &path);
            let why = format!(
                "larger than {} MiB, not checked",
                limits::SOURCE / (1024 * 1024)
            );
            let text = report::inconclusive(&display, &target.server.name, &why);
            return Ok(HookOutput::context(EventName::PostToolUse, text));
        }
        // Unreadable (not UTF-8, no permission, not a regular file) is not
        // clean either: touched, and said (engine attack E-4: silence, and
        // a touched loop COMPLETED over a Latin-1 file with errors).
        Err(error) => {
            record_touched(ctx, &path);
            let why = format!("cannot read it: {}", error.reason());
            let text = report::inconclusive(&display, &target.server.name, &why);
            return Ok(HookOutput::context(EventName::PostToolUse, text));
        }
    };
    let server_name = target.server.name.clone();
    let min_severity = settings.config.min_severity;
    let original = original_text(tool);
    let stored = baseline::load_entry(ctx, &display);
    let started = Instant::now();
    let timeout = settings.file_timeout(target.server);
    // A server still starting gets `warmup_wait` on top: its start-up is
    // not taken out of the check's own time (issue 11).
    let deadline = started + settings.warmup_wait() + timeout;
    let startup = target.server.startup_timeout;
    ctx.debug(format_args!(
        "{display}: checking with {} ({}), root {}, deadline {:.1} s",
        server_name,
        target.launch.program.display(),
        target.launch.root.display(),
        timeout.as_secs_f64()
    ));

    let scan = if settings.config.ast_grep {
        ast_grep::start(ctx, &path)
    } else {
        None
    };

    // The diagnostics of the text before the edit, when we can know them.
    let mut before: Option<Vec<Diag>> = None;
    let mut before_has_ast_grep = false;
    let stored_matches = match (&stored, &original) {
        (Some(entry), Some(old)) => entry.content_hash == content_hash(old),
        // Without the old text, trust the last result we have.
        (Some(_), None) => true,
        _ => false,
    };
    if stored_matches && let Some(entry) = &stored {
        before = Some(entry.diagnostics.clone());
        before_has_ast_grep = entry.ast_grep;
    }
    let mut pool = crate::daemon::pool(ctx);
    // Linters beside the checker (ruff) go first, each within its own share
    // of the file's time: they answer in milliseconds, and a checker that
    // takes the whole deadline must not cost their findings.
    let linters = resolve::linters(ctx, &settings, &path, target.server);
    let mut linter_results: Vec<ServerResult> = Vec::new();
    for linter in &linters {
        let until = (Instant::now() + timeout.mul_f64(LINTER_SHARE)).min(deadline);
        let limits = Limits {
            deadline: until,
            budget: None,
            startup: linter.server.startup_timeout,
        };
        let old_result = match (&before, original.as_deref()) {
            (None, Some(old)) if old != text && !old.is_empty() => Some(
                resolve::lsp_diagnostics_within(
                    &mut pool,
                    linter,
                    &path,
                    old,
                    min_severity,
                    settings.config.unused,
                    &limits,
                )
                .0
                .ok(),
            ),
            _ => None,
        };
        let (after, _) = resolve::lsp_diagnostics_within(
            &mut pool,
            linter,
            &path,
            &text,
            min_severity,
            settings.config.unused,
            &limits,
        );
        ctx.debug(format_args!(
            "{display}: {} answered beside {server_name}: {}",
            linter.server.name,
            match &after {
                Ok(diags) => format!("{} diagnostic(s)", diags.len()),
                Err(error) => error.to_string(),
            }
        ));
        linter_results.push(ServerResult {
            name: linter.server.name.clone(),
            before: old_result.flatten(),
            after,
        });
    }
    let mut baseline_used = Duration::ZERO;
    let mut primary_before: Option<Vec<Diag>> = None;
    if before.is_none() {
        match original.as_deref() {
            Some("") => {
                before = Some(Vec::new());
                before_has_ast_grep = true;
            }
            Some(old) if old != text && target.server.await_progress.is_none() => {
                let share = timeout.mul_f64(BASELINE_SHARE);
                let limits = Limits {
                    deadline: (started + settings.warmup_wait() + share).min(deadline),
                    budget: Some(share),
                    startup,
                };
                let asked = Instant::now();
                let (result, warmup) = resolve::lsp_diagnostics_within(
                    &mut pool,
                    &target,
                    &path,
                    old,
                    min_severity,
                    settings.config.unused,
                    &limits,
                );
                // What the old text's check took of the file's own time.
                baseline_used = asked.elapsed().saturating_sub(warmup);
                match result {
                    Ok(diags) => primary_before = Some(diags),
                    Err(error) => ctx.debug(format_args!(
                        "{display}: could not check the text before the edit: {error}"
                    )),
                }
            }
            _ => {}
        }
    }
    // The old text's diagnostics count only when every server gave them
    // (else a linter's old findings would all look new).
    if before.is_none()
        && let Some(mut old) = primary_before
        && linter_results.iter().all(|r| r.before.is_some())
    {
        for result in &linter_results {
            old.extend(result.before.iter().flatten().cloned());
        }
        before = Some(old);
    }

    let limits = Limits {
        deadline,
        budget: Some(timeout.saturating_sub(baseline_used)),
        startup,
    };
    let (result, _) = resolve::lsp_diagnostics_within(
        &mut pool,
        &target,
        &path,
        &text,
        min_severity,
        settings.config.unused,
        &limits,
    );
    let answered = Instant::now();
    pool.close(settings.shutdown_grace(target.server));
    ctx.debug(format_args!(
        "{display}: {server_name} answered after {} ms, shut down in {} ms",
        answered.duration_since(started).as_millis(),
        answered.elapsed().as_millis()
    ));
    let mut ast_grep_extras = ast_grep::Extras::default();
    let mut ast_grep_failure: Option<String> = None;
    let ast_grep_findings = scan.and_then(|scan| {
        // It started with the server and has had its own time since.
        let ast_deadline = started + Duration::from_millis(settings.config.ast_grep_timeout_ms);
        match scan.and_then(|scan| scan.finish_with_extras(ast_deadline)) {
            Ok((diags, extras)) => {
                ast_grep_extras = extras;
                Some(diags)
            }
            Err(why) => {
                eprintln!("ralph-hooks: warning: ast-grep skipped for {display}: {why}");
                ast_grep_failure = Some(why);
                None
            }
        }
    });

    // Every server that answered is reported; one that did not is named
    // with why, and its silence never reads as clean.
    let mut failures: Vec<String> = Vec::new();
    let mut lsp_diags: Vec<Diag> = Vec::new();
    let mut answered_by: Vec<String> = Vec::new();
    match result {
        Ok(diags) => {
            lsp_diags.extend(diags);
            answered_by.push(server_name.clone());
        }
        Err(error) if resolve::looks_not_installed(&error) => {
            let language = target.server.language.clone();
            return not_installed(
                ctx,
                &language,
                std::slice::from_ref(&target.server.command),
                &target.server.install_hint,
            );
        }
        Err(error @ LspError::StartFailed { .. }) => {
            record_touched(ctx, &path);
            return not_started(ctx, &display, &server_name, &error);
        }
        Err(error) => failures.push(failure_text(
            ctx,
            &display,
            &server_name,
            &error,
            started.elapsed(),
        )),
    }
    for linter in linter_results {
        match linter.after {
            Ok(diags) => {
                lsp_diags.extend(diags);
                answered_by.push(linter.name);
            }
            Err(error) if resolve::looks_not_installed(&error) => ctx.debug(format_args!(
                "{display}: {} is not installed after all: {error}",
                linter.name
            )),
            Err(error) => failures.push(failure_text(
                ctx,
                &display,
                &linter.name,
                &error,
                started.elapsed(),
            )),
        }
    }
    // Rules that did not run leave the file unproven: never "clean".
    if let Some(why) = ast_grep_failure {
        failures.push(format!(
            "ast-grep rules for {display}: inconclusive — {}. The file was not checked by them: do not take this as clean.",
            crate::util::text::escape_controls(&why)
        ));
    }
    resolve::sort_and_dedup(&mut lsp_diags);
    let servers_label = answered_by.join(" + ");

    let map = line_map(tool, original.as_deref(), &text);
    let unchanged = original.as_deref() == Some(text.as_str());
    let classification = classify_all(
        &lsp_diags,
        ast_grep_findings.as_deref(),
        before.as_deref(),
        before_has_ast_grep,
        unchanged,
        &map,
    );

    // A partial result is not kept as the file's baseline: the next edit
    // would take the silent server's problems for new ones.
    if failures.is_empty() {
        let mut after = lsp_diags.clone();
        after.extend(ast_grep_findings.iter().flatten().cloned());
        let entry = baseline_entry(
            ctx,
            &text,
            &servers_label,
            ast_grep_findings.is_some(),
            after,
        );
        if let Err(error) = baseline::save_entries(ctx, vec![(display.clone(), entry)]) {
            eprintln!("ralph-hooks: warning: cannot save the diagnostics baseline: {error:#}");
        }
    }

    let caps = Caps {
        max_items: settings.config.max_items,
        max_chars: settings.config.max_chars,
    };
    let context = if failures.is_empty() {
        file_context(
            &display,
            &servers_label,
            &classification,
            &ast_grep_extras,
            min_severity,
            caps,
        )
    } else {
        let mut answered_label = answered_by.clone();
        if ast_grep_findings.is_some() {
            answered_label.push("the ast-grep rules".into());
        }
        let mut context = failures.join("\n");
        if !answered_label.is_empty() {
            context.push('\n');
            context.push_str(&report::partial_context(
                &display,
                &answered_label.join(" and "),
                &classification.items,
                caps,
            ));
            let shown: Vec<&Diag> = classification.items.iter().map(|c| &c.diag).collect();
            let extras = ast_grep::render_extras(&shown, &ast_grep_extras);
            if !extras.is_empty() {
                context.push('\n');
                context.push_str(&extras);
            }
        }
        context
    };
    let running_loop = record_touched(ctx, &path);
    let blocking = running_loop
        .filter(|state| state.diagnostics)
        .and_then(|_| blocking_errors(&classification, settings.config.block_on));
    let mut output = HookOutput::context(EventName::PostToolUse, context);
    if let Some((errors, introduced)) = blocking {
        let refs: Vec<&Diag> = errors.iter().collect();
        let reported_by = if answered_by.is_empty() {
            "the ast-grep rules".to_string()
        } else {
            servers_label.clone()
        };
        output.decision = Some(Decision::Block);
        output.reason = Some(cap_chars(report::block_reason(
            &display,
            &reported_by,
            &refs,
            introduced,
            caps,
        )));
    }
    Ok(output)
}

/// The share of a file's time a linter beside its checker may use.
pub(super) const LINTER_SHARE: f64 = 0.25;

/// One server's answers for the edited file: the text before the edit
/// (when it was checked) and after.
struct ServerResult {
    name: String,
    before: Option<Vec<Diag>>,
    after: Result<Vec<Diag>, LspError>,
}

/// Why a server gave no answer for the file, in words: still starting
/// ("warming up"), running but silent ("timed out"), or another fault.
pub(super) fn failure_text(
    ctx: &Ctx,
    display: &str,
    server: &str,
    error: &LspError,
    waited: Duration,
) -> String {
    ctx.debug(format_args!("{display}: {server}: no answer: {error}"));
    match error {
        LspError::WarmingUp { .. } => report::warming_up(display, server, waited.as_secs_f64()),
        LspError::Timeout { .. } => report::timed_out(display, server, &error.to_string()),
        _ => report::inconclusive(display, server, &error.to_string()),
    }
}

/// The file's text before the edit: `originalFile`, or empty for a Write
/// that created the file; `None` when the tool response does not say.
/// What the baseline keeps for a file just checked: every diagnostic (the
/// server's and ast-grep's), sorted, for this text.
pub(super) fn baseline_entry(
    ctx: &Ctx,
    text: &str,
    server: &str,
    ast_grep_ran: bool,
    mut diagnostics: Vec<Diag>,
) -> FileEntry {
    resolve::sort_and_dedup(&mut diagnostics);
    FileEntry {
        content_hash: content_hash(text),
        checked_at: ctx.now(),
        server: server.to_string(),
        ast_grep: ast_grep_ran,
        diagnostics,
    }
}

/// One file's part of the hook's context: the classified report, then the
/// notes and fixes of the ast-grep rules it shows.
pub(super) fn file_context(
    display: &str,
    server: &str,
    classification: &Classification,
    extras: &ast_grep::Extras,
    min_severity: Severity,
    caps: Caps,
) -> String {
    let mut context = report::edit_context(
        display,
        server,
        &classification.items,
        &classification.fixed,
        min_severity,
        caps,
    );
    let shown: Vec<&Diag> = classification.items.iter().map(|c| &c.diag).collect();
    let extras = ast_grep::render_extras(&shown, extras);
    if !extras.is_empty() {
        context.push('\n');
        context.push_str(&extras);
    }
    context
}

fn original_text(tool: &ToolInput) -> Option<String> {
    let response = &tool.tool_response;
    match response.get("originalFile") {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Null) if tool.tool_name == "Write" => Some(String::new()),
        _ if response.get("type").and_then(Value::as_str) == Some("create") => Some(String::new()),
        _ => None,
    }
}

fn line_map(tool: &ToolInput, original: Option<&str>, text: &str) -> LineMap {
    if let Some(patch) = tool.tool_response.get("structuredPatch")
        && let Some(map) = LineMap::from_patch(patch)
    {
        return map;
    }
    match original {
        Some(old) => LineMap::from_texts(old, text),
        None => LineMap::identity(),
    }
}

/// LSP findings against the LSP baseline; ast-grep findings against the
/// ast-grep part of it, when the baseline has one.
fn classify_all(
    lsp: &[Diag],
    ast_grep: Option<&[Diag]>,
    before: Option<&[Diag]>,
    before_has_ast_grep: bool,
    unchanged: bool,
    map: &LineMap,
) -> Classification {
    let is_ast = |d: &&Diag| d.source.as_deref() == Some("ast-grep");
    let before_lsp: Option<Vec<Diag>> =
        before.map(|b| b.iter().filter(|d| !is_ast(d)).cloned().collect());
    let mut result = if unchanged && before_lsp.is_none() {
        // The edit changed nothing: whatever is there was there.
        let mut all = classify(None, lsp, map);
        for item in &mut all.items {
            item.origin = Origin::PreExisting;
        }
        all
    } else {
        classify(before_lsp.as_deref(), lsp, map)
    };
    if let Some(findings) = ast_grep {
        let before_ast: Option<Vec<Diag>> = before
            .filter(|_| before_has_ast_grep)
            .map(|b| b.iter().filter(is_ast).cloned().collect());
        let ast_result = classify(before_ast.as_deref(), findings, map);
        result.items.extend(ast_result.items);
        result.fixed.extend(ast_result.fixed);
    }
    result
}

/// The errors that block under `block_on`, and whether they are the
/// introduced ones.
pub(super) fn blocking_errors(
    classification: &Classification,
    block_on: BlockOn,
) -> Option<(Vec<Diag>, bool)> {
    let errors = |wanted: &dyn Fn(Origin) -> bool| -> Vec<Diag> {
        classification
            .items
            .iter()
            .filter(|c| c.diag.severity == Severity::Error && wanted(c.origin))
            .map(|c| c.diag.clone())
            .collect()
    };
    let (list, introduced) = match block_on {
        BlockOn::Never => return None,
        BlockOn::IntroducedErrors => (errors(&|o| o == Origin::Introduced), true),
        BlockOn::AnyErrors => (errors(&|_| true), false),
    };
    (!list.is_empty()).then_some((list, introduced))
}

/// An edit whose hook input was too large to read (over
/// [`crate::hook::protocol::MAX_INPUT_BYTES`]): the file is recorded as
/// touched (a loop's Stop checks it from disk) and Claude is told it was
/// not checked after this edit.
pub fn after_oversized_edit(ctx: &Ctx, file_path: &str) -> anyhow::Result<HookOutput> {
    let path = resolve::absolute(ctx, file_path);
    let settings = Settings::load(ctx);
    if !settings.config.enabled {
        return Ok(HookOutput::silent());
    }
    let display =
        crate::util::text::escape_controls(&resolve::display_path(ctx, &path)).into_owned();
    let checker = match resolve::resolve(ctx, &settings, &path) {
        Resolved::Target(target) => target.server.name.clone(),
        Resolved::NotInstalled { .. } => "no language server".to_string(),
        Resolved::Unsupported | Resolved::Skipped(_) => return Ok(HookOutput::silent()),
    };
    record_touched(ctx, &path);
    let why = format!(
        "the edit's hook input is larger than {} MiB (the file is too large to check after an edit), not checked",
        crate::hook::protocol::MAX_INPUT_BYTES / (1024 * 1024)
    );
    let text = report::inconclusive(&display, &checker, &why);
    Ok(HookOutput::context(EventName::PostToolUse, text))
}

/// Records `path` in the running loop's `touched_files` when the loop is
/// this session's (or not yet claimed); returns that loop.
pub(super) fn record_touched(ctx: &Ctx, path: &std::path::Path) -> Option<LoopState> {
    if !ctx.store().exists(LOOP_FILE) {
        return None;
    }
    let result = (|| -> anyhow::Result<Option<LoopState>> {
        let locked = ctx.store().lock(LOOP_FILE)?;
        let Some(mut state) = locked.load_json::<LoopState>()? else {
            return Ok(None);
        };
        if !state.is_running()
            || loop_ctl::ownership(&state, ctx.session_id.as_deref()) == Ownership::Other
        {
            return Ok(None);
        }
        let key = path.to_string_lossy().into_owned();
        if state.touched_files.insert(key) {
            state.updated_at = ctx.now();
            locked.save_json(&state)?;
        }
        Ok(Some(state))
    })();
    match result {
        Ok(state) => state,
        Err(error) => {
            eprintln!("ralph-hooks: warning: cannot record the edit in the loop: {error:#}");
            None
        }
    }
}

/// The one-line notice, once per language and session.
/// A server that did not start: told once per session and server.
pub(super) fn not_started(
    ctx: &Ctx,
    display: &str,
    server: &str,
    error: &LspError,
) -> anyhow::Result<HookOutput> {
    let first_time =
        baseline::claim_notice(ctx, &format!("start:{server}")).unwrap_or_else(|error| {
            eprintln!("ralph-hooks: warning: cannot record the notice: {error:#}");
            true
        });
    if !first_time {
        ctx.debug(format_args!(
            "{display}: {error}; already said so in this session"
        ));
        return Ok(HookOutput::silent());
    }
    let text = report::not_started(display, &error.to_string());
    Ok(HookOutput::context(EventName::PostToolUse, text.clone()).with_system_message(text))
}

fn not_installed(
    ctx: &Ctx,
    language: &str,
    tried: &[String],
    hint: &str,
) -> anyhow::Result<HookOutput> {
    let first_time = baseline::claim_notice(ctx, language).unwrap_or_else(|error| {
        eprintln!("ralph-hooks: warning: cannot record the notice: {error:#}");
        true
    });
    if !first_time {
        ctx.debug(format_args!(
            "no {language} server installed; already said so in this session"
        ));
        return Ok(HookOutput::silent());
    }
    let text = report::not_installed(language, tried, hint);
    Ok(HookOutput::context(EventName::PostToolUse, text.clone()).with_system_message(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, response: Value) -> ToolInput {
        ToolInput {
            tool_name: name.into(),
            tool_response: response,
            ..ToolInput::default()
        }
    }

    #[test]
    fn original_text_from_the_tool_response() {
        assert_eq!(
            original_text(&tool("Edit", json!({"originalFile": "a\n"}))).as_deref(),
            Some("a\n")
        );
        assert_eq!(
            original_text(&tool(
                "Write",
                json!({"type": "create", "originalFile": null})
            ))
            .as_deref(),
            Some("")
        );
        assert_eq!(original_text(&tool("Edit", json!({}))), None);
    }

    #[test]
    fn blocking_follows_block_on() {
        let error = Diag {
            line: 1,
            column: 1,
            severity: Severity::Error,
            source: None,
            code: None,
            message: "e".into(),
        };
        let classification = Classification {
            items: vec![crate::diagnostics::classify::Classified {
                diag: error,
                origin: Origin::PreExisting,
            }],
            fixed: vec![],
        };
        assert!(blocking_errors(&classification, BlockOn::IntroducedErrors).is_none());
        assert!(blocking_errors(&classification, BlockOn::Never).is_none());
        let (errors, introduced) = blocking_errors(&classification, BlockOn::AnyErrors).unwrap();
        assert_eq!(errors.len(), 1);
        assert!(!introduced);
    }
}

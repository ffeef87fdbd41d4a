//! The plan → run → sync pipeline of `/ralph <request>`: each phase runs in a sub-agent, saves its result with
//! `ralph-hooks resume phase`, and the next phase's prompt is rendered from
//! those results (never "as mentioned above").
//!
//! A pipeline is a resume state of the command `ralph` (`command-state/`):
//! its steps are the phases, its context the request, branch, last commit,
//! plan file and whether a draft PR is wanted. Phase results belong to a
//! pipeline by their `spec_id` output.
//!
//! - [`start`] names the spec, optionally creates a branch (`feature/<SPEC-ID>`, always with a PR), saves
//!   the state and returns the plan phase's prompt;
//! - [`advance`] checks the current phase's result: a completed one moves the
//!   pipeline on and returns the next prompt (or the end, with the PR); a
//!   failed or missing one stops it with the ways to recover;
//! - [`resume`] continues an interrupted pipeline (`--from`, `--restart`),
//!   refusing one whose branch or commit conflicts with the repository;
//! - [`views`] is what `pipeline status`, `status` and session start show.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};
use chrono::Duration;
use serde_json::{Map, Value, json};

use crate::hook::ctx::Ctx;
use crate::orchestrator::repo;
use crate::orchestrator::resume::{self, EXPIRY_DAYS, PhaseResult, ResumeState};
use crate::orchestrator::templates::{self, Variables};
use crate::state::ids;

/// The command name of a pipeline's resume state.
pub const COMMAND: &str = "ralph";
pub const PHASES: [&str; 3] = ["plan", "run", "sync"];
/// `current_phase` of a pipeline whose three phases completed.
pub const DONE: &str = "done";

const PLAN_PROMPT: &str = "\
You are the PLAN phase of the ralph pipeline {{SPEC_ID}} in the project {{PROJECT_ROOT}}.

Request: {{REQUEST}}

1. Read what you need of the project. Write the plan to {{PLAN_FILE}}: the goal, the steps, and ONE shell command that passes exactly when the work is done (the test command; write a test first if there is none).
2. Record the plan as a task with steps: `ralph-hooks task start \"{{REQUEST}}\" && ralph-hooks task steps set \"<step 1>\" \"<step 2>\" ...`.
3. Save the phase result; it is the only thing the next phase receives:
   `ralph-hooks resume phase plan --output spec_id={{SPEC_ID}} --output summary=\"<one line>\" --output test_command=\"<the test command>\" --output-path plan_file={{PLAN_FILE}} --file {{PLAN_FILE}} --next run`
If you cannot make a plan, save `ralph-hooks resume phase plan --status error --output spec_id={{SPEC_ID}} --output error=\"<why>\"` instead.
End with the one-line summary.
";

const RUN_PROMPT: &str = "\
You are the RUN phase of the ralph pipeline {{SPEC_ID}} in the project {{PROJECT_ROOT}}.

The plan phase saved (this is its result, nothing else is assumed):
- request: {{REQUEST}}
- summary: {{SUMMARY}}
- plan: {{PLAN_FILE}} (read it first)
- test command: {{TEST_COMMAND}}
- files it created: {{FILES_CREATED}}

1. Start a Ralph loop on the plan's goal, the project check and the test command: `ralph-hooks loop start \"{{SPEC_ID}}: {{SUMMARY}}\" --path \"{{PROJECT_ROOT}}\" --check \"{{TEST_COMMAND}}\"`. It ends only when the test command passes and `ralph-hooks check` finds no errors in the project; each stop tells you what is left.
2. Implement the plan's steps; mark each done with `ralph-hooks task step complete <step-id>`.
3. When `{{TEST_COMMAND}}` passes, save the phase result:
   `ralph-hooks resume phase run --output spec_id={{SPEC_ID}} --output test_command=\"{{TEST_COMMAND}}\" --file <each file you created or changed> --next sync`
If it cannot be made to pass, save `ralph-hooks resume phase run --status error --output spec_id={{SPEC_ID}} --output error=\"<what still fails>\"` instead.
End with one line: what you changed.
";

const SYNC_PROMPT: &str = "\
You are the SYNC phase of the ralph pipeline {{SPEC_ID}} in the project {{PROJECT_ROOT}}, on branch {{BRANCH}}.

The earlier phases saved (their results, nothing else is assumed):
- request: {{REQUEST}}
- summary: {{SUMMARY}}
- plan: {{PLAN_FILE}}
- test command (passes): {{TEST_COMMAND}}
- files the run phase created or changed: {{FILES_CREATED}}

1. Update the docs for what changed: add `- {{SPEC_ID}}: {{SUMMARY}}` under `## Unreleased` in {{CHANGELOG_FILE}} (create it if missing), and the README where users see a change.
2. Close the task: `ralph-hooks task complete --summary \"{{SUMMARY}}\"`.
3. Commit on the current branch, without the hooks' own state (their locks, logs and loop state are not the project's): `{{GIT_ADD}} && git commit -m \"{{SPEC_ID}}: {{SUMMARY}}\"`.
4. Save the phase result: `ralph-hooks resume phase sync --output spec_id={{SPEC_ID}} --output commit=\"$(git rev-parse HEAD)\" --file {{CHANGELOG_FILE}}`
If a step fails, save `ralph-hooks resume phase sync --status error --output spec_id={{SPEC_ID}} --output error=\"<what failed>\"` instead.
End with one line: the commit.
";

fn prompt_template(phase: &str) -> anyhow::Result<&'static str> {
    Ok(match phase {
        "plan" => PLAN_PROMPT,
        "run" => RUN_PROMPT,
        "sync" => SYNC_PROMPT,
        other => bail!("{other:?} is not a pipeline phase (plan, run, sync)"),
    })
}

/// The lock under which a new pipeline's SPEC-ID is chosen and saved.
const ID_LOCK: &str = "command-state/pipeline-ids";

/// `SPEC-<up to three words of the request>-NNN`, the first number free
/// among `taken`; a request without ASCII words is `SPEC-REQUEST-NNN`.
pub fn spec_id(request: &str, taken: &[String]) -> String {
    let words: Vec<String> = request
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| word.len() >= 3)
        .take(3)
        .map(str::to_ascii_uppercase)
        .collect();
    let stem = if words.is_empty() {
        "SPEC-REQUEST".to_string()
    } else {
        format!("SPEC-{}", words.join("-"))
    };
    (1..)
        .map(|n| format!("{stem}-{n:03}"))
        .find(|id| !taken.contains(id))
        .expect("an unbounded range has a free number")
}

fn pipelines(ctx: &Ctx) -> anyhow::Result<Vec<(String, ResumeState)>> {
    Ok(resume::states(ctx)?
        .into_iter()
        .filter(|(_, state)| state.short_command() == COMMAND)
        .collect())
}

fn git(root: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run git {}", args.join(" ")))?;
    if !output.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn plan_file(ctx: &Ctx, spec: &str) -> String {
    ctx.project_root
        .join(".claude")
        .join("plans")
        .join(format!("{spec}.md"))
        .display()
        .to_string()
}

/// Saves the pipeline's state now, with the branch and commit as they are
/// (the conflict check of the next resume compares against these).
fn save(ctx: &Ctx, state: &mut ResumeState) -> anyhow::Result<()> {
    state.timestamp = ctx.now();
    state.expiry = ctx.now() + Duration::days(EXPIRY_DAYS);
    state.context.remove("branch");
    state.context.remove("last_commit");
    repo::record(&ctx.project_root, &mut state.context);
    resume::save_state(ctx, state)?;
    Ok(())
}

/// Where `pipeline start` puts the work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Branch {
    /// The branch checked out now.
    Current,
    /// A new branch: the one named, else `feature/<spec id>`.
    New(Option<String>),
}

/// `pipeline start "<request>" [--branch[=NAME]] [--pr]`: the text for the
/// model. `--pr` without a branch still makes one: a PR needs a branch of
/// its own, and pushing the default branch would put the work straight on
/// the remote's.
pub fn start(
    ctx: &Ctx,
    request: &str,
    branch: Branch,
    pr: bool,
    mode: Mode,
) -> anyhow::Result<String> {
    if request.trim().is_empty() {
        bail!("the request is empty: say what to build, e.g. /ralph \"add a greet function\"");
    }
    // The number is chosen and the state saved under one lock: two starts
    // at once must not both find -001 free.
    let ids_lock = ctx.store().lock(ID_LOCK)?;
    let taken: Vec<String> = pipelines(ctx)?
        .into_iter()
        .map(|(_, state)| state.spec_id)
        .collect();
    let spec = spec_id(request, &taken);
    ids::check("spec", &spec)?;
    let mut text = String::new();
    let branch = match branch {
        Branch::Current if pr => Branch::New(None),
        other => other,
    };
    let mut new_branch = None;
    if let Branch::New(named) = branch {
        let flag = if pr { "--pr" } else { "--branch" };
        let name = named.unwrap_or_else(|| format!("feature/{spec}"));
        git(&ctx.project_root, &["rev-parse", "--verify", "-q", "HEAD"]).with_context(|| {
            format!(
                "{flag} needs a git repository with a commit in {}",
                ctx.project_root.display()
            )
        })?;
        git(&ctx.project_root, &["check-ref-format", "--branch", &name])
            .with_context(|| format!("{name:?} is not a valid branch name"))?;
        git(&ctx.project_root, &["checkout", "-q", "-b", &name])?;
        let _ = writeln!(text, "Created and checked out the branch {name}.");
        new_branch = Some(name);
    }
    let plans = ctx.project_root.join(".claude").join("plans");
    std::fs::create_dir_all(&plans)
        .with_context(|| format!("cannot create {}", plans.display()))?;
    let mut context = Map::new();
    context.insert("request".into(), json!(request));
    context.insert("plan_file".into(), json!(plan_file(ctx, &spec)));
    context.insert("pr".into(), json!(pr));
    if let Some(name) = &new_branch {
        // The PR's head, whatever is checked out when the pipeline ends.
        context.insert("pr_branch".into(), json!(name));
    }
    let mut state = ResumeState {
        command: COMMAND.into(),
        spec_id: spec.clone(),
        current_phase: PHASES[0].into(),
        completed_steps: Vec::new(),
        pending_steps: PHASES.map(String::from).to_vec(),
        timestamp: ctx.now(),
        expiry: ctx.now(),
        context,
    };
    save(ctx, &mut state)?;
    drop(ids_lock);
    let _ = writeln!(
        text,
        "Started the ralph pipeline {spec} for: {request}\nPhases: plan → run → sync. Each runs in a sub-agent and saves its result; the next prompt is rendered from those results."
    );
    text.push_str(&phase_instructions(ctx, &state, mode)?);
    Ok(text)
}

/// The latest result of `phase` for `spec`: one whose `spec_id` output names
/// it, else (for results saved without one) the latest without a `spec_id`.
pub fn phase_result(
    ctx: &Ctx,
    spec: &str,
    phase: &str,
) -> anyhow::Result<Option<(String, PhaseResult)>> {
    let mut results: Vec<(String, PhaseResult)> = resume::load_all(ctx)?
        .into_iter()
        .filter_map(|(name, entry)| match entry {
            resume::Entry::Phase(result) if result.phase == phase => Some((name, result)),
            _ => None,
        })
        .collect();
    let spec_of = |result: &PhaseResult| {
        result
            .outputs
            .get("spec_id")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    results.retain(|(_, result)| spec_of(result).is_none_or(|s| s == spec));
    // Oldest first: the last is the latest.
    Ok(results.pop())
}

/// Who does a phase: a sub-agent (`/ralph`) or the model itself (the
/// single-phase commands `/ralph-plan`, `/ralph-run`, `/ralph-sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    SubAgent,
    Yourself,
}

/// What the model does next for the pipeline's current phase: start a
/// sub-agent with exactly the rendered prompt, then `pipeline next` (or do
/// it itself).
fn phase_instructions(ctx: &Ctx, state: &ResumeState, mode: Mode) -> anyhow::Result<String> {
    let phase = state.current_phase.as_str();
    let index = PHASES
        .iter()
        .position(|p| *p == phase)
        .with_context(|| format!("{} is at {phase:?}, not a phase", state.spec_id))?;
    let prompt = render_prompt(ctx, state)?;
    let cli = cli_name();
    if mode == Mode::Yourself {
        let then = match PHASES.get(index + 1) {
            Some(next) => format!(
                "then stop: `/ralph-{next} {}` continues with phase {next}",
                state.spec_id
            ),
            None => "then the pipeline is done".to_string(),
        };
        return Ok(format!(
            "\nPhase {}/3: {phase}. Do it yourself now, following exactly these instructions, {then}:\n\n<<<PROMPT\n{prompt}PROMPT\n",
            index + 1
        ));
    }
    Ok(format!(
        "\nPhase {}/3: {phase}. Start ONE sub-agent for it (the Agent tool, in the foreground: `run_in_background: false`, since the next step needs its result), with exactly this prompt, placeholders already filled:\n\n<<<PROMPT\n{prompt}PROMPT\n\nWhen the sub-agent has returned, run `{cli} pipeline next {spec}`: it checks the phase's saved result and prints the next step. Do not do the phase's work yourself.\n",
        index + 1,
        spec = state.spec_id
    ))
}

/// How the CLI is called in printed commands and prompts: by the absolute
/// path of this executable, as the installed slash commands call it (a
/// sub-agent's PATH need not have it).
fn cli_name() -> String {
    std::env::current_exe()
        .ok()
        .filter(|exe| exe.file_name().is_some_and(|name| name == "ralph-hooks"))
        .map(|exe| {
            let text = exe.display().to_string();
            if text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
            {
                text
            } else {
                shell_words(&text)
            }
        })
        .unwrap_or_else(|| "ralph-hooks".to_string())
}

/// The current phase's prompt, from the pipeline's facts and the results
/// of the phases before it.
pub fn render_prompt(ctx: &Ctx, state: &ResumeState) -> anyhow::Result<String> {
    let phase = state.current_phase.as_str();
    let mut variables = Variables::default();
    let branch = repo::Repository::read(&ctx.project_root)
        .and_then(|repo| repo.branch)
        .unwrap_or_else(|| "(none: not a git repository, or a detached HEAD)".into());
    let base = json!({"outputs": {
        "spec_id": state.spec_id,
        "request": state.context.get("request").and_then(Value::as_str).unwrap_or_default(),
        "project_root": ctx.project_root.display().to_string(),
        "plan_file": state.context.get("plan_file").and_then(Value::as_str).unwrap_or_default(),
        "changelog_file": ctx.project_root.join("CHANGELOG.md").display().to_string(),
        "branch": branch,
        "git_add": git_add_command(ctx),
    }});
    variables.add_outputs(ctx, "the pipeline state", &base)?;
    for earlier in PHASES.iter().take_while(|p| **p != phase) {
        let Some((relative, result)) = phase_result(ctx, &state.spec_id, earlier)? else {
            bail!(
                "phase {earlier} of {} has no saved result, so phase {phase} has nothing to start from: run it again with `/ralph-resume {} --from {earlier}`",
                state.spec_id,
                state.spec_id
            );
        };
        let path = ctx.store().path(&relative).display().to_string();
        ctx.debug(format_args!("Loading context from {path}"));
        variables.add_outputs(ctx, &path, &serde_json::to_value(&result)?)?;
    }
    let template = prompt_template(phase)?.replace("ralph-hooks ", &format!("{} ", cli_name()));
    templates::render(ctx, &template, &variables).with_context(|| {
        format!(
            "cannot render the {phase} prompt of {}: an earlier phase did not save what it needs",
            state.spec_id
        )
    })
}

/// The sync phase's `git add`: everything but the state root when it lies
/// inside the project (it is ignored since `install`, but an older checkout
/// may track it; git refuses an exclusion outside the work tree).
fn git_add_command(ctx: &Ctx) -> String {
    match ctx.state_root.strip_prefix(&ctx.project_root) {
        Ok(relative) if !relative.as_os_str().is_empty() => format!(
            "git add -A -- . {}",
            shell_words(&format!(":(exclude){}", relative.display()))
        ),
        _ => "git add -A".to_string(),
    }
}

/// Finds the pipeline `spec`, or the only one there is.
fn find(ctx: &Ctx, spec: Option<&str>) -> anyhow::Result<ResumeState> {
    Ok(resume::find(ctx, COMMAND, spec)?.1)
}

/// The recovery options after a phase stopped.
fn recovery(spec: &str, phase: &str) -> String {
    format!(
        "Recover with one of:\n- `/ralph-resume {spec}`: run phase {phase} again from its saved context (after fixing the cause);\n- `/ralph-resume {spec} --from <plan|run|sync>`: continue from another phase;\n- `/ralph-resume {spec} --restart`: start again from the plan."
    )
}

/// Runs a test command in the project: `None` when it passed, else what
/// failed (status and the output's tail). The CLI passes the Ralph loop's
/// check runner; tests pass their own.
pub type Verify<'a> = &'a dyn Fn(&str) -> anyhow::Result<Option<String>>;

/// `pipeline next [SPEC]`: `Ok((text, true))` moved on (or finished);
/// `Ok((text, false))` stopped at a failed or missing phase result.
pub fn advance(ctx: &Ctx, spec: Option<&str>, verify: Verify) -> anyhow::Result<(String, bool)> {
    let mut state = find(ctx, spec)?;
    let spec = state.spec_id.clone();
    let phase = state.current_phase.clone();
    if phase == DONE {
        return Ok((
            format!("The ralph pipeline {spec} is already done: plan, run and sync completed.\n"),
            true,
        ));
    }
    let Some((relative, result)) = phase_result(ctx, &spec, &phase)? else {
        return Ok((
            format!(
                "STOPPED: the ralph pipeline {spec} is at phase {phase}, which saved no result (`ralph-hooks resume phase {phase} …`): the sub-agent did not finish it.\n{}\n",
                recovery(&spec, &phase)
            ),
            false,
        ));
    };
    if result.status != "completed" {
        let why = result
            .outputs
            .get("error")
            .map(|value| match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
            .unwrap_or_else(|| "(no error output saved)".into());
        return Ok((
            format!(
                "STOPPED: phase {phase} of the ralph pipeline {spec} failed ({}): {why}\nIts result: {}\nThe pipeline stops here; phases after {phase} did not run.\n{}\n",
                result.status,
                ctx.store().path(&relative).display(),
                recovery(&spec, &phase)
            ),
            false,
        ));
    }
    // The run phase's word is not enough: its test command must pass now,
    // or the pipeline stops here (seed 004 AC-CMD-001, a failing run).
    if phase == "run"
        && let Some(command) = plan_test_command(ctx, &spec)?
        && let Some(failure) = verify(&command)?
    {
        return Ok((
            format!(
                "STOPPED: phase run of the ralph pipeline {spec} saved \"completed\", but the plan's test command `{command}` fails: {failure}\nThe pipeline stops here; sync did not run.\n{}\n",
                recovery(&spec, &phase)
            ),
            false,
        ));
    }
    let mut text = format!(
        "Phase {phase} of {spec} completed (result {}).\n",
        ctx.store().path(&relative).display()
    );
    state.pending_steps.retain(|step| *step != phase);
    if !state.completed_steps.contains(&phase) {
        state.completed_steps.push(phase.clone());
    }
    match state.pending_steps.first().cloned() {
        Some(next) => {
            state.current_phase = next;
            save(ctx, &mut state)?;
            text.push_str(&phase_instructions(ctx, &state, Mode::SubAgent)?);
        }
        None => {
            state.current_phase = DONE.into();
            save(ctx, &mut state)?;
            let _ = writeln!(
                text,
                "The ralph pipeline {spec} is done: plan, run and sync completed."
            );
            if state.context.get("pr").and_then(Value::as_bool) == Some(true) {
                text.push_str(&draft_pr(ctx, &state)?);
            }
        }
    }
    Ok((text, true))
}

/// The test command the plan phase saved (`test_command`), if any.
fn plan_test_command(ctx: &Ctx, spec: &str) -> anyhow::Result<Option<String>> {
    Ok(phase_result(ctx, spec, "plan")?.and_then(|(_, plan)| {
        plan.outputs
            .get("test_command")
            .and_then(Value::as_str)
            .filter(|command| !command.trim().is_empty())
            .map(str::to_string)
    }))
}

/// `--pr`: a draft PR with the plan's summary through `gh` when it is
/// installed and logged in; otherwise exactly what to run.
fn draft_pr(ctx: &Ctx, state: &ResumeState) -> anyhow::Result<String> {
    let spec = &state.spec_id;
    let summary = phase_result(ctx, spec, "plan")?
        .and_then(|(_, plan)| {
            plan.outputs
                .get("summary")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| spec.clone());
    let title = format!("{spec}: {summary}");
    let body = format!(
        "{summary}\n\nRequest: {}\nPlan: {}\n\nMade by the ralph pipeline (plan → run → sync).",
        state
            .context
            .get("request")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        state
            .context
            .get("plan_file")
            .and_then(Value::as_str)
            .unwrap_or_default()
    );
    let branch = state
        .context
        .get("pr_branch")
        .or_else(|| state.context.get("branch"))
        .and_then(Value::as_str)
        .unwrap_or("HEAD");
    let command = format!(
        "git push -u origin {branch} && gh pr create --draft --head {branch} --title {} --body {}",
        shell_words(&title),
        shell_words(&body)
    );
    let gh_ready = which::which("gh").is_ok()
        && Command::new("gh")
            .args(["auth", "status"])
            .current_dir(&ctx.project_root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
    if !gh_ready {
        return Ok(format!(
            "--pr: `gh` is not installed or not logged in (`gh auth login`), so no PR was opened. To open the draft PR, run:\n{command}\n"
        ));
    }
    let output = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(&ctx.project_root)
        .stdin(Stdio::null())
        .output()
        .context("cannot run gh")?;
    let said = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if output.status.success() {
        Ok(format!("Opened the draft PR: {said}\n"))
    } else {
        Ok(format!(
            "--pr: opening the draft PR failed ({}); run it yourself:\n{command}\n",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn shell_words(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `pipeline resume [SPEC] [--from PHASE] [--restart]`.
pub fn resume(
    ctx: &Ctx,
    spec: Option<&str>,
    from: Option<&str>,
    restart: bool,
    verify: Verify,
) -> anyhow::Result<String> {
    if from.is_some() && restart {
        bail!("--from and --restart contradict each other: give one");
    }
    let mut state = find(ctx, spec)?;
    let spec = state.spec_id.clone();
    let conflicts = repo::check(&ctx.project_root, &state.context);
    if !conflicts.is_empty() && !restart {
        bail!(
            "cannot resume the ralph pipeline {spec}: {}; or start it again with --restart",
            conflicts.join("; ")
        );
    }
    let start_at = if restart {
        PHASES[0]
    } else if let Some(from) = from {
        let index = PHASES
            .iter()
            .position(|p| *p == from)
            .with_context(|| format!("--from {from:?}: the phases are plan, run and sync"))?;
        // Starting later than a phase that never completed would hand the
        // next phase nothing: refuse, naming it.
        for earlier in &PHASES[..index] {
            let done = phase_result(ctx, &spec, earlier)?
                .is_some_and(|(_, result)| result.status == "completed");
            if !done {
                bail!(
                    "--from {from}: phase {earlier} of {spec} never completed, so {from} has nothing to start from; resume --from {earlier}"
                );
            }
        }
        PHASES[index]
    } else if state.current_phase == DONE {
        return Ok(format!(
            "The ralph pipeline {spec} is done: nothing to resume (`--from <phase>` or `--restart` runs phases again).\n"
        ));
    } else {
        let current = PHASES
            .iter()
            .position(|p| *p == state.current_phase)
            .with_context(|| format!("{spec} is at {:?}, not a phase", state.current_phase))?;
        // Interrupted after a phase saved its result but before the pipeline
        // moved on: that phase is done, continue after it.
        let mut index = current;
        while index < PHASES.len()
            && phase_result(ctx, &spec, PHASES[index])?
                .is_some_and(|(_, result)| result.status == "completed")
        {
            index += 1;
        }
        match PHASES.get(index) {
            Some(phase) => phase,
            None => {
                let (text, _) = advance(ctx, Some(&spec), verify)?;
                return Ok(text);
            }
        }
    };
    let index = PHASES.iter().position(|p| *p == start_at).unwrap_or(0);
    state.completed_steps = PHASES[..index].iter().map(|p| p.to_string()).collect();
    state.pending_steps = PHASES[index..].iter().map(|p| p.to_string()).collect();
    state.current_phase = start_at.to_string();
    if restart {
        // Earlier results must not feed the restarted phases.
        for phase in PHASES {
            while let Some((relative, _)) = phase_result(ctx, &spec, phase)? {
                ctx.store().lock(&relative)?.remove()?;
            }
        }
    } else {
        // The phase to run again starts without its old result.
        while let Some((relative, result)) = phase_result(ctx, &spec, start_at)? {
            let _ = result;
            ctx.store().lock(&relative)?.remove()?;
        }
    }
    save(ctx, &mut state)?;
    let mut text = format!("Resuming the ralph pipeline {spec} at phase {start_at}");
    if state.completed_steps.is_empty() {
        text.push_str(".\n");
    } else {
        let _ = writeln!(
            text,
            "; already completed, not run again: {}.",
            state.completed_steps.join(", ")
        );
    }
    text.push_str(&phase_instructions(ctx, &state, Mode::SubAgent)?);
    Ok(text)
}

/// `pipeline phase run|sync [SPEC]` (`/ralph-run`, `/ralph-sync`): the
/// phase's instructions for the model itself, once the phase before it
/// completed; `false` with the STOPPED report when it did not.
pub fn single_phase(
    ctx: &Ctx,
    phase: &str,
    spec: Option<&str>,
    verify: Verify,
) -> anyhow::Result<(String, bool)> {
    let index = PHASES
        .iter()
        .position(|p| *p == phase)
        .filter(|index| *index > 0)
        .with_context(|| format!("{phase:?}: give run or sync (plan starts with /ralph-plan)"))?;
    let state = match find(ctx, spec) {
        Ok(state) => state,
        Err(error) => bail!("{error:#}; make a plan first with /ralph-plan \"<request>\""),
    };
    let previous = PHASES[index - 1];
    let mut text = String::new();
    if state.current_phase == previous {
        let (moved, moved_on) = advance(ctx, Some(&state.spec_id), verify)?;
        if !moved_on {
            return Ok((moved, false));
        }
        text.push_str(moved.lines().next().unwrap_or_default());
        text.push('\n');
    } else if state.current_phase != phase {
        bail!(
            "the ralph pipeline {} is at phase {}, not {phase}: `ralph-hooks pipeline status` shows where it stands; /ralph-resume {} --from {phase} runs {phase} again",
            state.spec_id,
            state.current_phase,
            state.spec_id
        );
    }
    let state = find(ctx, Some(&state.spec_id))?;
    text.push_str(&phase_instructions(ctx, &state, Mode::Yourself)?);
    Ok((text, true))
}

/// One phase of a pipeline as status shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PhaseView {
    pub phase: String,
    /// `completed`, `error`, `interrupted`, `current` or `pending`.
    pub state: String,
    pub result_file: Option<String>,
    pub outputs: Map<String, Value>,
    pub files_created: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PipelineView {
    pub spec_id: String,
    pub request: String,
    pub current_phase: String,
    pub branch: Option<String>,
    pub saved: String,
    pub phases: Vec<PhaseView>,
    /// What to do next, as a sentence with the command.
    pub next: String,
}

/// Every pipeline, oldest first.
pub fn views(ctx: &Ctx) -> anyhow::Result<Vec<PipelineView>> {
    let mut views = Vec::new();
    for (_, state) in pipelines(ctx)? {
        let spec = &state.spec_id;
        let mut phases = Vec::new();
        let mut failed = None;
        for phase in PHASES {
            let result = phase_result(ctx, spec, phase)?;
            let done = state.completed_steps.iter().any(|s| s == phase);
            let current = state.current_phase == phase;
            let status = match (&result, done, current) {
                (_, true, _) => "completed".to_string(),
                (Some((_, r)), false, true) if r.status != "completed" => {
                    failed = Some(phase);
                    r.status.clone()
                }
                (_, false, true) => "current".to_string(),
                _ => "pending".to_string(),
            };
            let shown = result.filter(|_| status != "pending" && status != "current");
            phases.push(PhaseView {
                phase: phase.to_string(),
                state: status,
                result_file: shown
                    .as_ref()
                    .map(|(rel, _)| ctx.store().path(rel).display().to_string()),
                outputs: shown
                    .as_ref()
                    .map(|(_, r)| r.outputs.clone())
                    .unwrap_or_default(),
                files_created: shown.map(|(_, r)| r.files_created).unwrap_or_default(),
            });
        }
        let next = if state.current_phase == DONE {
            "nothing: done".to_string()
        } else if let Some(phase) = failed {
            format!(
                "phase {phase} failed: fix the cause, then `/ralph-resume {spec}` (or `--from <phase>`, `--restart`)"
            )
        } else {
            format!(
                "phase {}: `/ralph-resume {spec}` continues it",
                state.current_phase
            )
        };
        views.push(PipelineView {
            spec_id: spec.clone(),
            request: state
                .context
                .get("request")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            current_phase: state.current_phase.clone(),
            branch: state
                .context
                .get("branch")
                .and_then(Value::as_str)
                .map(str::to_string),
            saved: resume::rfc3339(state.timestamp),
            phases,
            next,
        });
    }
    Ok(views)
}

/// The text of `pipeline status` (and its part in `status`).
pub fn describe(view: &PipelineView) -> String {
    let mut text = String::new();
    let branch = view
        .branch
        .as_deref()
        .map(|b| format!(", branch {b}"))
        .unwrap_or_default();
    let _ = writeln!(
        text,
        "Pipeline {} — {} (phase {}{branch}, saved {})",
        view.spec_id, view.request, view.current_phase, view.saved
    );
    for phase in &view.phases {
        let mark = match phase.state.as_str() {
            "completed" => "✅",
            "current" => "▶",
            "pending" => "□",
            _ => "✗",
        };
        let mut produced: Vec<String> = phase
            .outputs
            .iter()
            .filter(|(key, _)| *key != "spec_id")
            .map(|(key, value)| match value {
                Value::String(text) => format!("{key}={text}"),
                other => format!("{key}={other}"),
            })
            .collect();
        if !phase.files_created.is_empty() {
            produced.push(format!("files {}", phase.files_created.join(", ")));
        }
        let produced = if produced.is_empty() {
            String::new()
        } else {
            format!(": {}", produced.join("; "))
        };
        let _ = writeln!(text, "  {mark} {} {}{produced}", phase.phase, phase.state);
    }
    let _ = writeln!(text, "  next: {}", view.next);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_ids_come_from_the_request_and_never_collide() {
        assert_eq!(
            spec_id("add a greet function", &[]),
            "SPEC-ADD-GREET-FUNCTION-001"
        );
        assert_eq!(
            spec_id(
                "add a greet function",
                &["SPEC-ADD-GREET-FUNCTION-001".into()]
            ),
            "SPEC-ADD-GREET-FUNCTION-002"
        );
        assert_eq!(spec_id("사용자 인증 시스템", &[]), "SPEC-REQUEST-001");
        assert!(ids::is_valid(&spec_id("a/../../b; rm -rf ~", &[])));
    }

    #[test]
    fn every_prompt_names_only_variables_the_pipeline_provides() {
        // The plan phase has only the pipeline's own facts; run and sync add
        // what plan and run save (as their prompts tell them to).
        let base = [
            "SPEC_ID",
            "REQUEST",
            "PROJECT_ROOT",
            "PLAN_FILE",
            "CHANGELOG_FILE",
            "BRANCH",
            "GIT_ADD",
        ];
        let from_plan = [
            "SUMMARY",
            "TEST_COMMAND",
            "FILES_CREATED",
            "NEXT_PHASE",
            "PHASE",
        ];
        for (phase, extra) in [
            ("plan", &[][..]),
            ("run", &from_plan[..]),
            ("sync", &from_plan[..]),
        ] {
            let template = prompt_template(phase).unwrap();
            for piece in template.split("{{").skip(1) {
                let name = piece.split("}}").next().unwrap();
                let placeholder = format!("{{{{{name}}}}}");
                assert!(
                    base.contains(&name) || extra.contains(&name),
                    "{phase} uses {placeholder}, which nothing provides"
                );
            }
        }
    }
}

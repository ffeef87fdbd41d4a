//! Issue 15 through the real `ralph-hooks` binary: the seed 000 gaps
//! (next-phase guidance, path outputs, `{{FILES_CREATED}}`/`{{NEXT_PHASE}}`,
//! branch and commit conflicts) and the plan → run → sync pipeline
//! (`pipeline start|next|phase|resume|status`, its part in `status`), and
//! the slash commands documenting their arguments.

use std::path::Path;
use std::process::Output;

use crate::util::{self, TempDir};

const SPEC: &str = "SPEC-ADD-GREET-FUNCTION-001";

fn run(project: &Path, args: &[&str]) -> Output {
    util::command("ralph-hooks", project)
        .env("TMPDIR", project)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn ok(output: Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

fn git(project: &Path, args: &str) -> String {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "git -c user.email=t@t -c user.name=t -c init.defaultBranch=main {args}"
        ))
        .current_dir(project)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args}: {}", stderr(&output));
    stdout(&output).trim().to_string()
}

fn git_repo(project: &Path) {
    git(project, "init -q");
    git(project, "commit -q --allow-empty -m init");
}

#[test]
fn phase_prints_guidance_to_the_next_phase() {
    let temp = TempDir::new("pipeline-guidance");
    let project = temp.path();
    let text = ok(run(
        project,
        &[
            "resume",
            "phase",
            "1-plan",
            "--output",
            "spec_id=SPEC-1",
            "--next",
            "2-run",
        ],
    ));
    assert!(
        text.ends_with("Next phase: 2-run. Hand it this phase's results explicitly, never as \"mentioned above\": render its prompt with `ralph-hooks render <template> --context 1-plan`, which fills {{SPEC_ID}}, {{FILES_CREATED}}, {{NEXT_PHASE}}.\n"),
        "{text}"
    );
    let text = ok(run(project, &["resume", "phase", "3-sync"]));
    assert!(
        text.ends_with("Phase 3-sync was the last one (no --next): nothing follows.\n"),
        "{text}"
    );
    let text = ok(run(
        project,
        &[
            "resume", "phase", "2-run", "--status", "error", "--next", "3-sync",
        ],
    ));
    assert!(
        text.contains("Phase 2-run did not complete (error): the next phase must not start."),
        "{text}"
    );
}

#[test]
fn path_outputs_are_saved_absolute_and_checked_and_render_with_files_created() {
    let temp = TempDir::new("pipeline-paths");
    let project = temp.path();
    std::fs::create_dir_all(project.join("docs")).unwrap();
    ok(run(
        project,
        &[
            "resume",
            "phase",
            "0-project",
            "--output-path",
            "product_doc=docs/product.md",
            "--file",
            "docs/product.md",
            "--next",
            "1-plan",
        ],
    ));
    let saved = ok(run(project, &["resume", "list", "--json"]));
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    let absolute = project.join("docs/product.md").display().to_string();
    assert_eq!(
        saved["phase_results"][0]["outputs"]["product_doc"],
        absolute.as_str()
    );
    std::fs::write(
        project.join("prompt.md"),
        "Read {{PRODUCT_DOC}}; made {{FILES_CREATED}}; then {{NEXT_PHASE}}.\n",
    )
    .unwrap();
    let text = ok(run(
        project,
        &["render", "prompt.md", "--context", "0-project"],
    ));
    assert_eq!(
        text,
        format!("Read {absolute}; made {absolute}; then 1-plan.\n")
    );

    let outside = run(
        project,
        &[
            "resume",
            "phase",
            "0-project",
            "--output-path",
            "doc=../elsewhere.md",
        ],
    );
    assert_eq!(outside.status.code(), Some(1));
    assert!(
        stderr(&outside)
            .starts_with("ralph-hooks: --output-path doc: path outside the project root"),
        "{}",
        stderr(&outside)
    );
    let missing_parent = run(
        project,
        &[
            "resume",
            "phase",
            "0-project",
            "--output-path",
            "doc=nowhere/x.md",
        ],
    );
    assert!(
        stderr(&missing_parent).contains("parent directory not found"),
        "{}",
        stderr(&missing_parent)
    );
}

#[test]
fn resume_refuses_a_state_whose_branch_or_commit_no_longer_matches() {
    let temp = TempDir::new("pipeline-conflict");
    let project = temp.path();
    git_repo(project);
    git(project, "checkout -q -b feature/SPEC-1");
    let save = |extra: &[&str]| {
        let mut args = vec![
            "resume",
            "save",
            "alfred:2-run",
            "SPEC-1",
            "--phase",
            "implementation",
            "--pending",
            "code,test",
        ];
        args.extend_from_slice(extra);
        ok(run(project, &args))
    };
    save(&[]);
    let listed: serde_json::Value =
        serde_json::from_str(&ok(run(project, &["resume", "list", "--json"]))).unwrap();
    let context = &listed["resumable"][0]["context"];
    assert_eq!(
        context["branch"], "feature/SPEC-1",
        "save records the branch"
    );
    assert_eq!(
        context["last_commit"],
        git(project, "rev-parse HEAD").as_str()
    );

    // Work went on: a later commit on the same branch is no conflict.
    git(project, "commit -q --allow-empty -m more");
    ok(run(project, &["resume", "show", "2-run"]));

    git(project, "checkout -q -b other");
    let refused = run(project, &["resume", "show", "2-run"]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        stderr(&refused),
        "ralph-hooks: cannot resume alfred:2-run SPEC-1: conflict: the state was saved on branch feature/SPEC-1, but the repository is on other: `git checkout feature/SPEC-1` first; or start it again with --restart\n"
    );
    ok(run(project, &["resume", "show", "2-run", "--restart"]));

    git(project, "checkout -q feature/SPEC-1");
    save(&[
        "--context",
        "last_commit=0123456789abcdef0123456789abcdef01234567",
    ]);
    let refused = run(project, &["resume", "show", "2-run"]);
    assert!(
        stderr(&refused).contains("conflict: the saved last commit 0123456789abcdef0123456789abcdef01234567 does not exist in the repository"),
        "{}",
        stderr(&refused)
    );
    // A commit reset away from the branch's history.
    let head = git(project, "rev-parse HEAD");
    save(&["--context", &format!("last_commit={head}")]);
    git(project, "reset -q --hard HEAD~1");
    let refused = run(project, &["resume", "show", "2-run"]);
    assert!(
        stderr(&refused).contains(&format!(
            "conflict: the saved last commit {head} is not in the history of HEAD"
        )),
        "{}",
        stderr(&refused)
    );
}

/// The plan phase's result as the plan sub-agent saves it.
fn save_plan(project: &Path, status: &str) -> String {
    std::fs::write(project.join(format!(".claude/plans/{SPEC}.md")), "# plan\n").unwrap();
    ok(run(
        project,
        &[
            "resume",
            "phase",
            "plan",
            "--status",
            status,
            "--output",
            &format!("spec_id={SPEC}"),
            "--output",
            "summary=greet(name) returns a greeting",
            "--output",
            "test_command=python3 test_greet.py",
            "--output",
            "error=could not find the module",
            "--output-path",
            &format!("plan_file=.claude/plans/{SPEC}.md"),
            "--next",
            "run",
        ],
    ))
}

#[test]
fn the_pipeline_moves_on_only_after_a_completed_phase_and_stops_at_a_failed_one() {
    let temp = TempDir::new("pipeline-flow");
    let project = temp.path();
    let started = ok(run(project, &["pipeline", "start", "add a greet function"]));
    assert!(
        started.contains(&format!("Started the ralph pipeline {SPEC}")),
        "{started}"
    );
    assert!(started.contains("Phase 1/3: plan."), "{started}");
    assert!(!started.contains("{{"), "{started}");

    // No result yet: stopped, with the recovery options.
    let next = run(project, &["pipeline", "next"]);
    assert_eq!(next.status.code(), Some(1));
    assert!(
        stdout(&next).starts_with(&format!(
            "STOPPED: the ralph pipeline {SPEC} is at phase plan, which saved no result"
        )),
        "{}",
        stdout(&next)
    );

    save_plan(project, "error");
    let next = run(project, &["pipeline", "next", SPEC]);
    assert_eq!(next.status.code(), Some(1));
    let text = stdout(&next);
    assert!(text.starts_with(&format!("STOPPED: phase plan of the ralph pipeline {SPEC} failed (error): could not find the module")), "{text}");
    for option in [
        format!("`/ralph-resume {SPEC}`"),
        format!("`/ralph-resume {SPEC} --from <plan|run|sync>`"),
        format!("`/ralph-resume {SPEC} --restart`"),
    ] {
        assert!(text.contains(&option), "{option} missing:\n{text}");
    }
    let status = ok(run(project, &["pipeline", "status"]));
    assert!(status.contains("  ✗ plan error: "), "{status}");
    assert!(status.contains("next: phase plan failed"), "{status}");
    let refused = run(project, &["pipeline", "resume", "--from", "run"]);
    assert!(
        stderr(&refused)
            .contains("--from run: phase plan of SPEC-ADD-GREET-FUNCTION-001 never completed"),
        "{}",
        stderr(&refused)
    );

    save_plan(project, "completed");
    let text = ok(run(project, &["pipeline", "next"]));
    assert!(text.contains("Phase 2/3: run."), "{text}");
    let plan_file = project
        .join(format!(".claude/plans/{SPEC}.md"))
        .display()
        .to_string();
    assert!(
        text.contains(&format!("- plan: {plan_file} (read it first)")),
        "{text}"
    );
    assert!(text.contains("--check \"python3 test_greet.py\""), "{text}");
    // The run phase's loop also needs the project check clean (issue 11).
    assert!(
        text.contains(&format!("--path \"{}\"", project.display())),
        "{text}"
    );
    assert!(!text.contains("{{"), "{text}");

    let status = ok(run(project, &["status"]));
    assert!(
        status.contains(&format!(
            "Pipeline {SPEC} — add a greet function (phase run"
        )),
        "{status}"
    );
    assert!(status.contains("  ✅ plan completed: "), "{status}");
    assert!(status.contains("  ▶ run current"), "{status}");
    assert!(status.contains("  □ sync pending"), "{status}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(run(project, &["status", "--json"]))).unwrap();
    assert_eq!(json["pipelines"][0]["current_phase"], "run");

    // /ralph-sync before the run completed stops with what is missing.
    let early = run(project, &["pipeline", "phase", "sync"]);
    assert_eq!(early.status.code(), Some(1));
    assert!(
        stdout(&early).starts_with(&format!(
            "STOPPED: the ralph pipeline {SPEC} is at phase run, which saved no result"
        )),
        "{}",
        stdout(&early)
    );
}

#[test]
fn single_phase_commands_hand_the_model_the_phase_itself() {
    let temp = TempDir::new("pipeline-single");
    let project = temp.path();
    let text = ok(run(
        project,
        &["pipeline", "start", "--plan-only", "add a greet function"],
    ));
    assert!(
        text.contains("Phase 1/3: plan. Do it yourself now"),
        "{text}"
    );
    assert!(
        text.contains(&format!("then stop: `/ralph-run {SPEC}` continues")),
        "{text}"
    );
    let too_early = run(project, &["pipeline", "phase", "sync"]);
    assert!(
        stderr(&too_early).contains("is at phase plan, not sync"),
        "{}",
        stderr(&too_early)
    );
    let refused = run(project, &["pipeline", "phase", "run"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stdout(&refused).starts_with("STOPPED"),
        "{}",
        stdout(&refused)
    );
    save_plan(project, "completed");
    let text = ok(run(project, &["pipeline", "phase", "run", SPEC]));
    assert!(
        text.starts_with(&format!("Phase plan of {SPEC} completed")),
        "{text}"
    );
    assert!(
        text.contains("Phase 2/3: run. Do it yourself now"),
        "{text}"
    );
    assert!(!text.contains("Agent tool"), "{text}");
}

#[test]
fn start_with_branch_needs_a_repository_and_creates_the_branch() {
    let temp = TempDir::new("pipeline-branch");
    let project = temp.path();
    let refused = run(
        project,
        &["pipeline", "start", "add a greet function", "--branch"],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("--branch needs a git repository with a commit"),
        "{}",
        stderr(&refused)
    );
    git_repo(project);
    let text = ok(run(
        project,
        &["pipeline", "start", "add a greet function", "--branch"],
    ));
    assert!(
        text.starts_with(&format!(
            "Created and checked out the branch feature/{SPEC}."
        )),
        "{text}"
    );
    assert_eq!(
        git(project, "branch --show-current"),
        format!("feature/{SPEC}")
    );
    // The second pipeline for the same request gets the next number.
    let text = ok(run(project, &["pipeline", "start", "add a greet function"]));
    assert!(text.contains("SPEC-ADD-GREET-FUNCTION-002"), "{text}");
    // A branch the user names.
    ok(run(
        project,
        &[
            "pipeline",
            "start",
            "add a greet function",
            "--branch=work/greet",
        ],
    ));
    assert_eq!(git(project, "branch --show-current"), "work/greet");
}

#[test]
fn pr_without_gh_says_exactly_what_to_run() {
    let temp = TempDir::new("pipeline-pr");
    let project = temp.path();
    git_repo(project);
    ok(run(
        project,
        &["pipeline", "start", "add a greet function", "--pr"],
    ));
    // --pr alone still puts the work on a branch of its own.
    assert_eq!(
        git(project, "branch --show-current"),
        format!("feature/{SPEC}")
    );
    save_plan(project, "completed");
    ok(run(project, &["pipeline", "next"]));
    ok(run(
        project,
        &[
            "resume",
            "phase",
            "run",
            "--output",
            &format!("spec_id={SPEC}"),
        ],
    ));
    // The plan's test command must pass before the pipeline leaves run.
    std::fs::write(project.join("test_greet.py"), "print('ok')\n").unwrap();
    let sync = ok(run(project, &["pipeline", "next"]));
    // The sync prompt's commit leaves the hooks' state out: run its `git
    // add` as the sub-agent would.
    let add = sync
        .lines()
        .find_map(|line| line.split('`').find(|piece| piece.starts_with("git add")))
        .unwrap_or_else(|| panic!("no git add in the sync prompt:\n{sync}"));
    let add = add.split(" && ").next().unwrap();
    git(project, add.trim_start_matches("git "));
    let staged = git(project, "diff --cached --name-only");
    assert!(staged.contains("test_greet.py"), "{add}: {staged}");
    assert!(!staged.contains(".claude/orchestrator"), "{add}: {staged}");
    ok(run(
        project,
        &[
            "resume",
            "phase",
            "sync",
            "--output",
            &format!("spec_id={SPEC}"),
        ],
    ));
    // The end, with a PATH without gh: it prints the exact command.
    let mut command = util::command("ralph-hooks", project);
    command.env("PATH", "/usr/bin:/bin").env("TMPDIR", project);
    let text = ok(command.args(["pipeline", "next"]).output().unwrap());
    assert!(
        text.contains(&format!("The ralph pipeline {SPEC} is done")),
        "{text}"
    );
    assert!(
        text.contains(&format!("--pr: `gh` is not installed or not logged in (`gh auth login`), so no PR was opened. To open the draft PR, run:\ngit push -u origin feature/{SPEC} && gh pr create --draft --head feature/{SPEC} --title '{SPEC}: greet(name) returns a greeting' --body 'greet(name) returns a greeting\n")),
        "{text}"
    );
    let status: serde_json::Value =
        serde_json::from_str(&ok(run(project, &["pipeline", "status", "--json"]))).unwrap();
    assert_eq!(status["pipelines"][0]["current_phase"], "done");
    let again = ok(run(project, &["pipeline", "next"]));
    assert!(again.contains("already done"), "{again}");
}

#[test]
fn a_run_phase_whose_test_command_fails_stops_the_pipeline() {
    let temp = TempDir::new("pipeline-run-fails");
    let project = temp.path();
    ok(run(project, &["pipeline", "start", "add a greet function"]));
    save_plan(project, "completed");
    ok(run(project, &["pipeline", "next"]));
    std::fs::write(
        project.join("test_greet.py"),
        "import sys\nprint('greet is missing')\nsys.exit(3)\n",
    )
    .unwrap();
    // The run phase claims success; the test command says otherwise.
    ok(run(
        project,
        &[
            "resume",
            "phase",
            "run",
            "--output",
            &format!("spec_id={SPEC}"),
            "--next",
            "sync",
        ],
    ));
    let stopped = run(project, &["pipeline", "next"]);
    assert_eq!(stopped.status.code(), Some(1));
    let text = stdout(&stopped);
    assert!(
        text.starts_with(&format!("STOPPED: phase run of the ralph pipeline {SPEC} saved \"completed\", but the plan's test command `python3 test_greet.py` fails: exit 3\n")),
        "{text}"
    );
    assert!(
        text.contains("greet is missing"),
        "the output's tail is shown:\n{text}"
    );
    assert!(text.contains("sync did not run"), "{text}");
    assert!(text.contains(&format!("`/ralph-resume {SPEC}`")), "{text}");
    let status: serde_json::Value =
        serde_json::from_str(&ok(run(project, &["pipeline", "status", "--json"]))).unwrap();
    assert_eq!(
        status["pipelines"][0]["current_phase"], "run",
        "it did not move on"
    );

    std::fs::write(project.join("test_greet.py"), "print('ok')\n").unwrap();
    let text = ok(run(project, &["pipeline", "next"]));
    assert!(text.contains("Phase 3/3: sync."), "{text}");
}

#[test]
fn every_pipeline_command_documents_its_arguments() {
    for (name, text) in ralph_hooks::cli::install::COMMANDS {
        // ralph-loop, ralph-check and ralph-fix are not pipeline commands.
        if !name.starts_with("ralph")
            || ["ralph-loop.md", "ralph-check.md", "ralph-fix.md"].contains(name)
        {
            continue;
        }
        assert!(
            text.contains("\nargument-hint: "),
            "{name}: no argument-hint"
        );
        assert!(
            text.contains("\nArguments:\n- `"),
            "{name}: no Arguments section"
        );
        assert!(
            text.contains("```!\nralph-hooks pipeline "),
            "{name}: does not run the pipeline CLI"
        );
    }
}

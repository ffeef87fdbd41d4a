"""/ralph "add a greet function" --branch: plan, run and sync each ran in a
sub-agent whose prompt the pipeline rendered from the earlier phases' saved
results; the branch exists, every phase result is on disk, and no sub-agent
prompt had a {{placeholder}} left."""

import glob
import json
import os
import subprocess
import sys

from e2e_check import Checks, Run

SPEC = "SPEC-ADD-GREET-FUNCTION-001"
run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)


def git(*args):
    return subprocess.run(["git", "-C", run.project, *args], capture_output=True, text=True).stdout.strip()


check.equal(git("branch", "--show-current"), "feature/" + SPEC, "the work happened on the new branch")
check.equal(git("log", "-1", "--format=%s"), SPEC + ": greet(name) returns a greeting", "sync committed on it")

results = {}
for path in glob.glob(os.path.join(run.state_root, "command-state", "*.json")):
    with open(path, encoding="utf-8") as file:
        value = json.load(file)
    if "phase" in value:
        results[value["phase"]] = value
for phase in ("plan", "run", "sync"):
    check.equal((results.get(phase) or {}).get("status"), "completed", "the %s phase result is on disk" % phase)
check.equal((results.get("plan") or {}).get("outputs", {}).get("plan_file"),
            os.path.join(run.project, ".claude/plans", SPEC + ".md"), "the plan's path output was saved absolute")
check.equal((results.get("run") or {}).get("files_created"), [os.path.join(run.project, "greet.py")],
            "the run phase's files were saved as absolute paths")
check.equal((results.get("sync") or {}).get("outputs", {}).get("commit"), git("rev-parse", "HEAD"), "sync saved its commit")

pipeline = subprocess.run(["ralph-hooks", "pipeline", "status", "--json"], cwd=run.project, capture_output=True, text=True)
views = json.loads(pipeline.stdout or "{}").get("pipelines") or []
check.equal([view.get("current_phase") for view in views], ["done"], "pipeline status says the one pipeline is done")


def subagent_prompts(run):
    """The distinct prompts sub-agents started with: the first user message's
    block that begins "You are the <PHASE> phase of the ralph pipeline"."""
    prompts = []
    for call in run.calls:
        messages = call["body"].get("messages") or []
        content = messages[0].get("content") if messages else ""
        blocks = [content] if isinstance(content, str) else [b.get("text", "") for b in content or [] if isinstance(b, dict)]
        for text in blocks:
            if text.startswith("You are the ") and "phase of the ralph pipeline" in text and text not in prompts:
                prompts.append(text)
    return prompts


prompts = subagent_prompts(run)
openings = sorted(text[:20] for text in prompts)
check.equal(openings, ["You are the PLAN pha", "You are the RUN phas", "You are the SYNC pha"],
            "the mock received the three sub-agent prompts")
check(all("{{" not in text for text in prompts), "no sub-agent prompt had a placeholder left",
      [text for text in prompts if "{{" in text])

loop = run.state_json("loop.json") or {}
check.equal(loop.get("checks"), ["python3 test_greet.py"], "the run phase's loop checks the plan's test command")
check.equal(loop.get("status"), "COMPLETED", "the loop completed at the final stop, its check passing")
check.contains(run.project_file("CHANGELOG.md") or "", SPEC + ": greet(name) returns a greeting", "sync wrote the changelog")
check.finish()

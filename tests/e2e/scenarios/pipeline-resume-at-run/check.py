"""A pipeline interrupted after its plan phase is announced at session start,
and /ralph-resume continues it at run (not plan again): the run sub-agent's
prompt is rendered from the saved plan result, and the pipeline ends at sync."""

import json
import os
import subprocess
import sys

from e2e_check import Checks, Run

SPEC = "SPEC-ADD-GREET-FUNCTION-001"
run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)


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
check.equal(len(prompts), 1, "one sub-agent ran")
check(prompts and "You are the RUN phase" in prompts[0], "it was the run phase, not the plan again", prompts)
check(all("{{" not in text for text in prompts), "no sub-agent prompt had a placeholder left")

status = subprocess.run(["ralph-hooks", "pipeline", "status", "--json"], cwd=run.project, capture_output=True, text=True)
views = json.loads(status.stdout or "{}").get("pipelines") or []
check.equal([view.get("current_phase") for view in views], ["sync"], "the pipeline moved on to sync")
phases = {phase["phase"]: phase["state"] for phase in (views[0]["phases"] if views else [])}
check.equal(phases, {"plan": "completed", "run": "completed", "sync": "current"}, "plan and run completed, sync current")
check.equal(run.project_file("greet.py") is not None, True, "the run phase wrote greet.py")
check.equal((run.state_json("loop.json") or {}).get("status"), "COMPLETED", "the run phase's loop completed at the stop")
check.finish()

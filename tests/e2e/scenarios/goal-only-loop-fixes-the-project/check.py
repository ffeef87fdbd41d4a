"""`/ralph-loop <goal>` with a goal alone: the loop runs until the project has
no errors. The model got the first feedback from the start, fixed files
over two turns (Python, then Python and TypeScript), and the loop completed with a summary."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
state = run.state_json("loop.json") or {}
check.equal(state.get("goal"), "fix all type errors", "the unquoted goal arrived as one goal")
check.equal(state.get("project"), True, "a goal alone is a project loop")
check.equal(state.get("status"), "COMPLETED", "the loop completed once the project had no errors")
history = state.get("history") or []
check.equal([entry.get("decision") for entry in history], ["block", "complete"], "one blocked stop, then the completing one")
if len(history) == 2:
    check.equal(history[0].get("conditions", {}).get("project", {}).get("files"),
                {"app/service.py": {"errors": 1, "warnings": 0}, "web/index.ts": {"errors": 1, "warnings": 0}},
                "the first stop recorded the remaining errors per file")
check.equal((state.get("start_record") or {}).get("files"),
            {"app/models.py": {"errors": 2, "warnings": 0}, "app/service.py": {"errors": 1, "warnings": 0},
             "web/index.ts": {"errors": 1, "warnings": 0}},
            "the start check is kept in the loop")
check.finish()

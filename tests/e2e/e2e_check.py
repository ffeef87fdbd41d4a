"""Helpers for a scenario's check.py: read what a run left in its OUT folder
and report assertions one per line.

    import sys
    from e2e_check import Run, Checks      # the runner puts tests/e2e on PYTHONPATH

    run = Run(sys.argv[1])
    check = Checks()
    check(run.ended_normally(), "claude ended the run normally", run.result)
    check.contains(run.new_text(2), "iteration 1/", "the follow-up prompt names the iteration")
    check.equal(run.state_json("loop.json")["status"], "COMPLETED", "the loop completed")
    check.finish()                         # exits 1 when any check failed

What a Run offers:
    run.out, run.project, run.home, run.state_root   folders (absolute)
    run.requests        every request the mock logged (dicts; see mock_api.py)
    run.calls           the main-loop calls only, in order (call i answered turn i)
    run.new_text(i)     the text that was new to the model in call i (prompt and
                        session context in call 0; tool results, hook context and
                        Stop feedback later), blocks joined by newlines
    run.new_blocks(i)   the same as (role, block type, is_error, text) tuples
    run.tool_results(i) the (is_error, text) of the tool results in call i
    run.system_text(i)  the system prompt of call i, as text
    run.stream          claude's stream-json events; run.result is its final
                        "result" event (or None)
    run.session_id      the session id claude reported
    run.hook_runs(prefix) the hooks claude ran, in order, from its debug log:
                        dicts {label ("Stop", "PreToolUse:Bash",
                        "SessionStart:startup"...), command, status, ms, error};
                        only those whose label starts with prefix, if given
    run.state_json(rel) a JSON file under the state root (None when absent)
    run.events()        the state root's events.jsonl, parsed
    run.project_file(rel) the text of a project file (None when absent)
"""

import json
import os
import sys

import mock_api


def _json_lines(path):
    records = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as file:
            for line in file:
                line = line.strip()
                if line:
                    try:
                        records.append(json.loads(line))
                    except ValueError:
                        pass
    return records


class Run:
    def __init__(self, out):
        self.out = os.path.realpath(out)
        with open(os.path.join(self.out, "result.json"), encoding="utf-8") as file:
            self.summary = json.load(file)
        self.project = self.summary["project"]
        self.home = self.summary["home"]
        self.state_root = os.path.join(self.project, ".claude", "orchestrator")
        self.requests = _json_lines(os.path.join(self.out, "requests.jsonl"))
        self.calls = [record for record in self.requests if record.get("kind") == "main"]
        self.stream = _json_lines(os.path.join(self.out, "stream.jsonl"))
        self.result = self.summary.get("result")
        self.session_id = self.summary.get("session_id")

    def new_blocks(self, index):
        if index >= len(self.calls):
            return []
        return list(mock_api.message_blocks(mock_api.new_input_messages(self.calls[index]["body"])))

    def new_text(self, index):
        return "\n".join(block[3] for block in self.new_blocks(index))

    def tool_results(self, index):
        return [(is_error, text) for _, kind, is_error, text in self.new_blocks(index) if kind == "tool_result"]

    def system_text(self, index):
        system = self.calls[index]["body"].get("system") if index < len(self.calls) else None
        if isinstance(system, list):
            return "\n".join(part.get("text", "") for part in system if isinstance(part, dict))
        return system or ""

    def hook_runs(self, prefix=""):
        return [run for run in self.summary.get("hooks", []) if run["label"].startswith(prefix)]

    def ended_normally(self):
        """claude exited 0 and its final result event is a success, not an error."""
        result = self.result or {}
        return self.summary.get("exit_status") == 0 and result.get("subtype") == "success" and not result.get("is_error")

    def state_json(self, relative):
        path = os.path.join(self.state_root, relative)
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as file:
            return json.load(file)

    def events(self):
        return _json_lines(os.path.join(self.state_root, "events.jsonl"))

    def project_file(self, relative):
        path = os.path.join(self.project, relative)
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()


class Checks:
    """Collects assertions; each prints one `ok`/`FAIL` line, with detail on failure."""

    def __init__(self):
        self.failed = 0
        self.passed = 0

    def __call__(self, condition, what, detail=None):
        if condition:
            self.passed += 1
            print("  ok    %s" % what)
        else:
            self.failed += 1
            print("  FAIL  %s" % what)
            if detail is not None:
                text = detail if isinstance(detail, str) else json.dumps(detail, indent=2, default=str)
                print("        " + text[-3000:].replace("\n", "\n        "))
        return bool(condition)

    def equal(self, actual, expected, what):
        return self(actual == expected, what, "expected %r, got %r" % (expected, actual))

    def contains(self, text, needle, what):
        return self(text is not None and needle in text, what, "%r not in:\n%s" % (needle, text))

    def not_contains(self, text, needle, what):
        return self(text is not None and needle not in text, what, "%r unexpectedly in:\n%s" % (needle, text))

    def finish(self):
        print("  %d of %d checks held" % (self.passed, self.passed + self.failed))
        sys.exit(1 if self.failed else 0)

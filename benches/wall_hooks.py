#!/usr/bin/env python3
"""Hook start-up in wall time: each hook binary of every BIN_DIR given runs N
times (interleaved across the folders) with a captured Claude Code payload
in a fresh one-commit git project, no daemon; prints the median per hook
and folder as a Markdown table, and /bin/true for scale.

    N=40 python3 benches/wall_hooks.py BIN_DIR [BIN_DIR...]

PAYLOADS (default ../shared/e2e/payloads) holds SessionStart.json,
PreToolUse.json, PostToolUse.Bash.json and Stop.json with /PROJECT in them.
On a loaded machine prefer benches/callgrind_hooks.sh (instructions).
"""
import subprocess, time, os, statistics, sys, tempfile, shutil
dirs = sys.argv[1:]
work = tempfile.mkdtemp(prefix="ralph-wall-")
proj = os.path.join(work, "project")
os.makedirs(proj + "/.claude/orchestrator")
subprocess.run("git init -q && printf 'one\\n' > a.txt && printf '.claude/\\n' > .gitignore && git add -A && git -c user.name=b -c user.email=b@b commit -q -m init", shell=True, cwd=proj, check=True)
pay = os.environ.get("PAYLOADS", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "e2e", "payloads"))
def payload(name):
    return open(os.path.join(pay, name)).read().replace("/PROJECT", proj).encode()
cases = [
    ("SessionStart", "ralph-session-start", payload("SessionStart.json")),
    ("UserPromptSubmit", "ralph-user-prompt-submit", ('{"session_id":"s","hook_event_name":"UserPromptSubmit","cwd":"%s","prompt":"make the tests pass"}' % proj).encode()),
    ("PreToolUse Bash", "ralph-pre-tool-stop-guard", payload("PreToolUse.json")),
    ("PostToolUse Bash", "ralph-post-tool-lsp-diagnostic", payload("PostToolUse.Bash.json")),
    ("Stop, no loop", "ralph-stop-loop-controller", payload("Stop.json")),
]
env = dict(os.environ, CLAUDE_PROJECT_DIR=proj, RALPH_HOOKS_DAEMON="0")
N = int(os.environ.get("N", "40"))
print("| hook | " + " | ".join(os.path.basename(d) for d in dirs) + " |")
print("|---|" + "---:|" * len(dirs))
for label, binary, data in cases:
    times = {d: [] for d in dirs}
    for i in range(N):
        for d in dirs:
            t = time.perf_counter()
            subprocess.run([os.path.join(d, binary)], input=data, cwd=proj, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[d].append(time.perf_counter() - t)
    print("| %s | " % label + " | ".join("%.2f ms" % (statistics.median(times[d]) * 1000) for d in dirs) + " |")
t = []
for i in range(N):
    s = time.perf_counter(); subprocess.run(["/bin/true"]); t.append(time.perf_counter() - s)
print("| /bin/true | %.2f ms |" % (statistics.median(t) * 1000))
shutil.rmtree(work)

"""Test instrumentation for the e2e scenarios: registers a probe hook that
logs every payload for PreToolUse, PostToolUse, UserPromptSubmit and
UserPromptExpansion, beside ours, in the project's .claude/settings.json.

    python3 add_probe_hook.py /path/to/probe-hook.sh
"""

import json
import sys

path = ".claude/settings.json"
with open(path, encoding="utf-8") as file:
    settings = json.load(file)
handler = {"type": "command", "command": sys.argv[1]}
for event in ("PreToolUse", "PostToolUse", "UserPromptSubmit", "UserPromptExpansion"):
    group = {"hooks": [handler]} if event.startswith("User") else {"matcher": "*", "hooks": [handler]}
    settings.setdefault("hooks", {}).setdefault(event, []).append(group)
with open(path, "w", encoding="utf-8") as file:
    json.dump(settings, file, indent=2)

# A fact about the client the auto-resume relies on: an asyncRewake
# StopFailure hook that exits 2 wakes a stream-json session. This stand-in
# hook waits 3 s (as the auto-resume waits for the reset) and wakes it.
python3 - <<'PY'
import json, os
path = os.path.join(os.environ["E2E_PROJECT"], ".claude/settings.json")
settings = json.load(open(path))
settings["hooks"]["StopFailure"].append({"hooks": [{"type": "command", "asyncRewake": True, "timeout": 60,
    "command": "sh -c 'cat > /dev/null; sleep 3; echo E2E-WAKE-AFTER-LIMIT >&2; exit 2'"}]})
json.dump(settings, open(path, "w"))
PY

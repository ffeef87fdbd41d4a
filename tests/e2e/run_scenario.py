#!/usr/bin/env python3
"""Runs one end-to-end scenario: the real Claude Code CLI, in a fresh project
with our hooks installed, against the scripted mock Messages API, offline.

    python3 tests/e2e/run_scenario.py tests/e2e/scenarios/NAME
        [--out DIR] [--bin-dir DIR] [--claude PATH] [--timeout SECONDS]
        [--no-netns] [--quiet]

See tests/e2e/README.md for the scenario format. In order, it:
  1. re-runs itself in a new network namespace that has only loopback
     (`unshare -n`, or `unshare -r -n` when not root), unless --no-netns or
     that is not permitted (then it warns and goes on without isolation);
  2. makes OUT/project (a copy of the scenario's project/), OUT/home (a fresh
     HOME) and OUT/tmp;
  3. registers our hooks: `BIN_DIR/ralph-hooks install --project OUT/project`;
  4. runs the scenario's setup.sh in the project, if there is one;
  5. serves the scenario's script.json from the mock on 127.0.0.1;
  6. runs `claude -p PROMPT --output-format stream-json --verbose
     --permission-mode bypassPermissions --debug-file OUT/claude-debug.txt`
     in the project with a clean environment (BIN_DIR first on PATH, so the
     model's Bash calls find `ralph-hooks`), under a timeout;
  7. checks that the run followed the script (every "expect" held, every
     turn used, no call beyond the script, claude's exit status as expected)
     and that every hook claude ran exited 0;
  8. runs the scenario's check.py OUT.
It prints what the mock received and writes OUT/result.json. Exit status: 0
when everything held, 1 when something did not, 2 on a usage or setup error.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

# Importing the mock must not leave __pycache__ folders in the source tree.
sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import mock_api  # noqa: E402

NETNS_MARKER = "RALPH_E2E_IN_NETNS"
DEFAULT_TIMEOUT = 60.0


def fail_setup(message):
    print("run_scenario: %s" % message, file=sys.stderr)
    sys.exit(2)


def warn(message):
    print("run_scenario: warning: %s" % message, file=sys.stderr)


# ---------------------------------------------------------------------------
# Network isolation


def enter_loopback_only_namespace():
    """Re-executes this script under `unshare -n` (root) or `unshare -r -n`
    (an unprivileged user namespace). Returns only when neither is
    permitted, after a warning.

    Where it can, it also makes a PID namespace with this script as its
    init: when the script ends, the kernel ends every process still in it,
    so nothing the run started (a hook, a language server, a background
    shell) outlives it, whatever process group it put itself in."""
    unshare = shutil.which("unshare")
    if unshare is None:
        warn("unshare(1) is not installed: running WITHOUT network isolation")
        return
    own_pids = ["-p", "-f", "--mount-proc"]
    for flags in (["-n"] + own_pids, ["-n"], ["-r", "-n"] + own_pids, ["-r", "-n"]):
        probe = subprocess.run([unshare] + flags + ["true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if probe.returncode == 0:
            environment = dict(os.environ)
            environment[NETNS_MARKER] = "1"
            command = [unshare] + flags + [sys.executable, os.path.abspath(__file__)] + sys.argv[1:]
            sys.stdout.flush()
            sys.stderr.flush()
            os.execve(unshare, command, environment)
    warn("creating a network namespace is not permitted here: running WITHOUT network isolation")


def bring_loopback_up():
    """A new network namespace starts with `lo` down; set IFF_UP on it with
    the SIOCGIFFLAGS/SIOCSIFFLAGS ioctls, so no iproute2 is needed."""
    import fcntl

    get_flags, set_flags, interface_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh22x", fcntl.ioctl(sock, get_flags, request))[1]
        fcntl.ioctl(sock, set_flags, struct.pack("16sh22x", b"lo", flags | interface_up))


# ---------------------------------------------------------------------------
# Finding things


def find_claude(explicit):
    """--claude, then $CLAUDE_BIN, then .ci/install-claude.sh's prefix, then PATH."""
    prefix = os.environ.get("RALPH_HOOKS_CLAUDE_PREFIX") or os.path.join(
        os.path.expanduser("~"), ".cache", "ralph-hooks", "claude-code"
    )
    explicit = explicit or os.environ.get("CLAUDE_BIN")
    if explicit:
        # An explicit choice that is wrong must not quietly test another binary.
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return os.path.abspath(explicit)
        fail_setup("the claude binary %s (--claude or $CLAUDE_BIN) is not an executable file" % explicit)
    for candidate in (os.path.join(prefix, "node_modules", ".bin", "claude"), shutil.which("claude")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    fail_setup("no claude binary: run .ci/install-claude.sh, or set CLAUDE_BIN")


def find_bin_dir(explicit):
    """--bin-dir, then $RALPH_HOOKS_BIN_DIR, then target/debug of this checkout."""
    for candidate in (explicit, os.environ.get("RALPH_HOOKS_BIN_DIR"), os.path.join(REPO, "target", "debug")):
        if candidate and os.path.isfile(os.path.join(candidate, "ralph-hooks")):
            return os.path.realpath(candidate)
    fail_setup("no built ralph-hooks binaries: run `cargo build`, or pass --bin-dir")


def read_json(path, default=None):
    if not os.path.exists(path):
        return default
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def read_json_lines(path):
    records = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as file:
            for line in file:
                try:
                    records.append(json.loads(line))
                except ValueError:
                    pass  # claude may print a non-JSON line; it is in the file for a person to read
    return records


# Claude Code's debug log (--debug-file) has one line per hook it ran:
#   ... [DEBUG] Hooks: PreToolUse:Bash [/path/to/hook] finished with status 0 (15ms)
# followed, for a failure, by an [ERROR] line with the hook's stderr.
HOOK_RUN_LINE = re.compile(r"Hooks: (\S+) \[(.*)\] finished with status (-?\d+) \((\d+)ms\)")
# An asyncRewake hook is first logged as moved to the background (its exit
# status comes later, only as an [ERROR] line when it is 2, the wake signal).
HOOK_BACKGROUND_LINE = re.compile(r"Hooks: (\S+) \[(.*)\] moved to the background \((\d+)ms\)")
# Fire-and-forget hooks (StopFailure's) are logged without a time.
HOOK_DONE_LINE = re.compile(r"\[DEBUG\] (\S+) \[(.*)\] completed with status (-?\d+)\s*$")
HOOK_ERROR_LINE = re.compile(r"\[ERROR\] (\".*\")\s*$")
# A plugin's hook carries its plugin after the command:
#   ... Hooks: Stop [ralph-stop-loop-controller] (plugin ralph-hooks@ralph-hooks) finished ...
PLUGIN_TAG = re.compile(r"\] \(plugin ([^)\s]+)\)")


def hook_runs(debug_log_path):
    """Every hook run claude logged: {label, command, status, ms, error},
    and `plugin` (its id) for a plugin's hook."""
    runs = []
    if not os.path.exists(debug_log_path):
        return runs
    with open(debug_log_path, encoding="utf-8", errors="replace") as log:
        for line in log:
            tag = PLUGIN_TAG.search(line)
            if tag:
                line = line[: tag.start()] + "]" + line[tag.end():]
            count = len(runs)
            parse_hook_line(line, runs)
            if tag and len(runs) > count:
                runs[-1]["plugin"] = tag.group(1)
    return runs


def parse_hook_line(line, runs):
    """Appends the hook run a debug-log line records, or an error to the last."""
    found = HOOK_RUN_LINE.search(line)
    if found:
        label, command, status, ms = found.groups()
        runs.append({"label": label, "command": command, "status": int(status), "ms": int(ms), "error": None})
        return
    found = HOOK_BACKGROUND_LINE.search(line)
    if found:
        label, command, ms = found.groups()
        runs.append({"label": label, "command": command, "status": 0, "ms": int(ms), "error": None, "background": True})
        return
    found = HOOK_DONE_LINE.search(line)
    if found:
        label, command, status = found.groups()
        runs.append({"label": label, "command": command, "status": int(status), "ms": 0, "error": None})
        return
    error = HOOK_ERROR_LINE.search(line)
    if error and runs and runs[-1]["status"] != 0 and runs[-1]["error"] is None:
        try:
            runs[-1]["error"] = json.loads(error.group(1))
        except ValueError:
            runs[-1]["error"] = error.group(1)


# ---------------------------------------------------------------------------
# The run


def clean_environment(home, tmp, bin_dir):
    """What every child sees: nothing from the caller's shell but PATH (our
    binaries first; tools such as language servers may live on it) and the
    locale. No CLAUDE_* or RALPH_HOOKS_* from the developer's session."""
    environment = {
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": home,
        "TMPDIR": tmp,
        "SHELL": "/bin/bash",
        "TERM": "dumb",
        "LANG": os.environ.get("LANG") or "C.UTF-8",
        "USER": os.environ.get("USER") or "e2e",
        "LOGNAME": os.environ.get("LOGNAME") or os.environ.get("USER") or "e2e",
    }
    if os.geteuid() == 0:
        # Claude Code refuses bypassPermissions as root unless told it is sandboxed.
        environment["IS_SANDBOX"] = "1"
    return environment


def run_logged(command, log_path, **options):
    with open(log_path, "w", encoding="utf-8") as log:
        return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **options).returncode


def run_claude(command, project, environment, stdout_path, stderr_path, timeout, messages=None, settle=3.0):
    """Runs claude in its own process group; on timeout the whole group is
    killed, so no hook or tool it started outlives the run. Returns
    (exit status, seconds); the status is 124 on timeout.

    With `messages` (stream-json input), claude's stdin stays open: the
    first message is written at once, each next one when a `result` event
    answered the previous and the stream has been quiet for `settle`
    seconds, and stdin is closed once the last one was answered and the
    stream stayed quiet that long (an asyncRewake hook may wake the session
    meanwhile: its turns end in a `result` too)."""
    started = time.monotonic()
    with open(stdout_path, "w", encoding="utf-8") as stdout, open(stderr_path, "w", encoding="utf-8") as stderr:
        child = subprocess.Popen(
            command,
            cwd=project,
            env=environment,
            stdin=subprocess.PIPE if messages else subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            if messages:
                feed_messages(child, stdout_path, messages, settle, started + timeout)
            status = child.wait(timeout=max(0.1, started + timeout - time.monotonic()))
        except subprocess.TimeoutExpired:
            status = 124
        finally:
            # Reap anything the run left behind in its group (a hook still
            # running, a background shell) as well as claude itself on timeout.
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            child.wait()
    return status, time.monotonic() - started


def user_message(text):
    return json.dumps({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}) + "\n"


def feed_messages(child, stdout_path, messages, settle, deadline):
    """Writes the user messages to claude's stdin one answer at a time, then
    closes it when the session has been quiet for `settle` seconds."""
    child.stdin.write(user_message(messages[0]).encode("utf-8"))
    child.stdin.flush()
    sent = 1
    size, quiet_since = -1, time.monotonic()
    while time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.2)
        current = os.path.getsize(stdout_path)
        if current != size:
            size, quiet_since = current, time.monotonic()
            continue
        if time.monotonic() - quiet_since < settle:
            continue
        results = sum(1 for event in read_json_lines(stdout_path) if event.get("type") == "result")
        if results < sent:
            continue
        if sent < len(messages):
            child.stdin.write(user_message(messages[sent]).encode("utf-8"))
            child.stdin.flush()
            sent += 1
            quiet_since = time.monotonic()
            continue
        break
    try:
        child.stdin.close()
    except OSError:
        pass


def one_line(text, limit=220):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_requests(requests):
    """What the mock received, one block per main-loop call."""
    lines = []
    for record in requests:
        kind = record.get("kind")
        if kind not in ("main", "main-exhausted"):
            lines.append("  #%d %s %s (%s)" % (record["seq"], record.get("method"), record.get("path"), kind))
            continue
        body = record.get("body") or {}
        lines.append("  #%d turn %s%s" % (record["seq"], record.get("turn", "-"), " SCRIPT EXHAUSTED" if kind == "main-exhausted" else ""))
        for role, block_type, is_error, text in mock_api.message_blocks(mock_api.new_input_messages(body)):
            label = "%s %s%s" % (role, block_type, " ERROR" if is_error else "")
            lines.append("      in   %-22s %s" % (label, one_line(text)))
        expect = record.get("expect")
        if expect:
            lines.append("      expect %s" % ("ok" if expect["ok"] else "FAILED: " + "; ".join(expect["failures"])))
        for block in record.get("reply", {}).get("content", []):
            if block.get("type") == "tool_use":
                lines.append("      out  tool_use %s %s" % (block.get("name"), one_line(json.dumps(block.get("input")))))
            else:
                lines.append("      out  text %s" % one_line(block.get("text", "")))
    return lines


def script_problems(requests, n_turns, allow_unused):
    problems = []
    for record in requests:
        expect = record.get("expect")
        if expect and not expect["ok"]:
            problems.append(
                "turn %d: expectation failed: %s\n  what was new in that call:\n    %s"
                % (record["turn"], "; ".join(expect["failures"]), expect.get("new_input", "").replace("\n", "\n    "))
            )
        if record.get("kind") == "main-exhausted":
            problems.append("a main-loop call (#%d) came after the script ran out" % record["seq"])
        if record.get("kind") == "mock-error":
            problems.append("the mock failed on request #%d: %s" % (record["seq"], record.get("error")))
    used = sum(1 for record in requests if record.get("kind") == "main")
    if used < n_turns and not allow_unused:
        problems.append("only %d of the script's %d turns were used" % (used, n_turns))
    return problems


def receipt_problems(project, bin_dir, environment, out):
    """Every loop that ended COMPLETED left a receipt that `verify` reproduces."""
    state = os.path.join(project, ".claude", "orchestrator")
    archive = os.path.join(state, "loops")
    problems = []
    for name in sorted(os.listdir(archive)) if os.path.isdir(archive) else []:
        loop = read_json(os.path.join(archive, name), {}) or {}
        if loop.get("status") != "COMPLETED":
            continue
        receipt = os.path.join(state, "receipts", name)
        if not os.path.isfile(receipt):
            problems.append("loop %s COMPLETED without a receipt" % loop.get("id"))
            continue
        log = os.path.join(out, "verify-%s.txt" % loop.get("id"))
        # The loop's own receipt, unsigned: its commands are the ones the
        # loop ran, so they may run.
        command = [os.path.join(bin_dir, "ralph-hooks"), "verify", receipt, "--run-unsigned"]
        status = run_logged(command, log, cwd=project, env=environment)
        conditions = ((read_json(receipt, {}) or {}).get("predicate", {})
                      .get("ralphHooks", {}).get("conditions", []))
        rerunnable = [c for c in conditions if c.get("kind") in ("command", "diagnostics")]
        # Exit 3: nothing differs, but nothing could be re-run (a loop whose
        # only condition was the promise): the honest answer for it.
        if status == 3 and not rerunnable:
            continue
        if status != 0:
            with open(log, encoding="utf-8", errors="replace") as file:
                said = file.read().strip()
            problems.append("ralph-hooks verify of loop %s exited %d: %s" % (loop.get("id"), status, one_line(said, 600)))
    return problems


def main():
    parser = argparse.ArgumentParser(description="Run one end-to-end scenario against the real Claude Code CLI.")
    parser.add_argument("scenario", help="a folder under tests/e2e/scenarios/")
    parser.add_argument("--out", help="where the run's files go (default: a new temp folder, kept)")
    parser.add_argument("--bin-dir", help="folder with the built ralph-hooks binaries (default: target/debug)")
    parser.add_argument("--claude", help="the claude binary (default: $CLAUDE_BIN, the install prefix, PATH)")
    parser.add_argument("--timeout", type=float, help="seconds before claude is killed (default: scenario.json's, else 60)")
    parser.add_argument("--no-netns", action="store_true", help="do not isolate the network")
    parser.add_argument("--quiet", action="store_true", help="print only problems and the summary line")
    args = parser.parse_args()

    scenario = os.path.realpath(args.scenario)
    name = os.path.basename(scenario)
    script_path = os.path.join(scenario, "script.json")
    if not os.path.isfile(script_path):
        fail_setup("%s has no script.json" % scenario)
    options = read_json(os.path.join(scenario, "scenario.json"), {})
    claude = find_claude(args.claude)
    bin_dir = find_bin_dir(args.bin_dir)
    if args.out is None:
        args.out = tempfile.mkdtemp(prefix="ralph-e2e-%s-" % name)
        # The re-run inside the namespace must use the same folder.
        sys.argv[1:1] = ["--out", args.out]

    if not args.no_netns and os.environ.get(NETNS_MARKER) != "1":
        enter_loopback_only_namespace()
    isolated = os.environ.get(NETNS_MARKER) == "1"
    if isolated:
        bring_loopback_up()

    started = time.monotonic()
    out = os.path.realpath(args.out)
    os.makedirs(out, exist_ok=True)
    project, home, tmp = (os.path.join(out, part) for part in ("project", "home", "tmp"))
    for folder in (project, home, tmp):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
    for stale in ("requests.jsonl", "stream.jsonl", "claude-stderr.txt", "claude-debug.txt", "result.json", "install.txt", "setup.txt"):
        if os.path.exists(os.path.join(out, stale)):
            os.remove(os.path.join(out, stale))
    if os.path.isdir(os.path.join(scenario, "project")):
        shutil.copytree(os.path.join(scenario, "project"), project, dirs_exist_ok=True, symlinks=True)

    substitutions = {
        "PROJECT": project,
        "STATE": os.path.join(project, ".claude", "orchestrator"),
        # The orchestrator's per-project folder is sessions/<PROJECT_HASH>/.
        "PROJECT_HASH": hashlib.md5(project.encode("utf-8")).hexdigest()[:8],
        "HOME": home,
        "OUT": out,
        "BIN_DIR": bin_dir,
        "SCENARIO": scenario,
        # The claude binary, so a setup.sh can drive `claude plugin …`.
        "CLAUDE": claude,
    }
    environment = clean_environment(home, tmp, bin_dir)
    # setup.sh and check.py see the placeholders as E2E_PROJECT, E2E_STATE, ...
    helper_environment = dict(environment, **{"E2E_" + name: value for name, value in substitutions.items()})
    if options.get("install_hooks", True):
        command = [os.path.join(bin_dir, "ralph-hooks"), "install", "--project", project]
        if run_logged(command, os.path.join(out, "install.txt"), cwd=project, env=helper_environment) != 0:
            fail_setup("`ralph-hooks install` failed:\n" + open(os.path.join(out, "install.txt")).read())
    if os.path.isfile(os.path.join(scenario, "setup.sh")):
        status = run_logged(["/bin/sh", "-e", os.path.join(scenario, "setup.sh")], os.path.join(out, "setup.txt"), cwd=project, env=helper_environment)
        if status != 0:
            fail_setup("setup.sh exited %d:\n%s" % (status, open(os.path.join(out, "setup.txt")).read()))

    script = read_json(script_path)
    prompt = "Do the task."
    if os.path.isfile(os.path.join(scenario, "prompt.txt")):
        with open(os.path.join(scenario, "prompt.txt"), encoding="utf-8") as file:
            prompt = file.read().strip()
    prompt = mock_api.fill_placeholders(prompt, substitutions)

    requests_path = os.path.join(out, "requests.jsonl")
    mock = mock_api.MockApi(script, requests_path, substitutions)
    port = mock.start()
    claude_environment = dict(environment)
    claude_environment.update(
        {
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:%d" % port,
            "ANTHROPIC_API_KEY": "e2e-dummy-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            # A client retry would replay a call the script already answered,
            # and would back off for minutes when the mock is unreachable.
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
    )
    claude_environment.update(mock_api.fill_placeholders(options.get("env", {}), substitutions))
    debug_log_path = os.path.join(out, "claude-debug.txt")
    messages = [mock_api.fill_placeholders(text, substitutions) for text in options.get("messages", [])]
    if messages or options.get("stream_input"):
        # stream-json input: the prompt and the next messages come on stdin,
        # which stays open while the session may still be woken.
        command = [claude, "-p", "--input-format", "stream-json"]
        messages = [prompt] + messages
    else:
        command = [claude, "-p", prompt]
    command += ["--output-format", "stream-json", "--verbose", "--permission-mode", "bypassPermissions"]
    # Claude Code's debug log is the one place that records every hook run
    # with its exit status; stream-json reports only SessionStart hooks.
    command += ["--debug-file", debug_log_path]
    command += mock_api.fill_placeholders(options.get("claude_args", []), substitutions)
    timeout = args.timeout or float(options.get("timeout", DEFAULT_TIMEOUT))
    try:
        status, claude_seconds = run_claude(
            command, project, claude_environment, os.path.join(out, "stream.jsonl"), os.path.join(out, "claude-stderr.txt"), timeout,
            messages=messages if command[2:3] == ["--input-format"] else None, settle=float(options.get("settle", 3.0)),
        )
    finally:
        mock.stop()

    requests = read_json_lines(requests_path)
    stream = read_json_lines(os.path.join(out, "stream.jsonl"))
    result_event = next((event for event in reversed(stream) if event.get("type") == "result"), None)
    session_id = next((event.get("session_id") for event in stream if event.get("session_id")), None)
    problems = []
    expected_status = options.get("exit", 0)
    if status == 124:
        problems.append("claude did not finish within %.0f s (killed)" % timeout)
    elif status != expected_status:
        problems.append("claude exited %d, expected %d (stderr: %s)" % (status, expected_status, one_line(open(os.path.join(out, "claude-stderr.txt")).read(), 600)))
    problems += script_problems(requests, len(script.get("turns", [])), options.get("allow_unused_turns", False))
    hooks = hook_runs(debug_log_path)
    if options.get("install_hooks", True) and not hooks:
        # Every session runs our SessionStart hook at least.
        problems.append("no hook runs in claude-debug.txt: were the hooks registered, or did Claude Code's debug log change?")
    if not options.get("allow_hook_failures", False):
        # Our hooks fail open with exit 1 on an internal fault: the run goes
        # on, so only this catches it.
        for run in hooks:
            # Exit 2 is the wake signal of our asyncRewake registration.
            if run["status"] == 2 and run["command"].endswith("ralph-stop-loop-controller --rewake"):
                continue
            # `claude -p` exits right after a failed turn and may end a
            # StopFailure hook that is still finishing (it then reports the
            # hook as failed); such a scenario checks what the hook recorded.
            if run["status"] != 0 and run["label"].split(":")[0] in options.get("client_may_end_hooks", []):
                continue
            if run["status"] != 0:
                problems.append("hook %s [%s] exited %d: %s" % (run["label"], run["command"], run["status"], one_line(run["error"] or "", 600)))

    summary = {
        "scenario": name,
        "claude": claude,
        "bin_dir": bin_dir,
        "network_isolated": isolated,
        "exit_status": status,
        "claude_seconds": round(claude_seconds, 3),
        "session_id": session_id,
        "project": project,
        "home": home,
        "result": result_event,
        "hooks": hooks,
        "problems": problems,
    }
    with open(os.path.join(out, "result.json"), "w", encoding="utf-8") as file:
        json.dump(summary, file, indent=2)

    if not args.quiet:
        print("scenario %s: what the mock received" % name)
        print("\n".join(describe_requests(requests)))
        if result_event:
            print("result: %s" % one_line(json.dumps({key: result_event.get(key) for key in ("subtype", "is_error", "result", "num_turns")})))
    sys.stdout.flush()

    check_path = os.path.join(scenario, "check.py")
    if os.path.isfile(check_path):
        checker_environment = dict(helper_environment, PYTHONPATH=HERE, PYTHONDONTWRITEBYTECODE="1")
        checked = subprocess.run([sys.executable, check_path, out], cwd=scenario, env=checker_environment, stdin=subprocess.DEVNULL)
        if checked.returncode != 0:
            problems.append("check.py failed (exit %d)" % checked.returncode)
    problems.extend(receipt_problems(project, bin_dir, helper_environment, out))
    for problem in problems:
        print("PROBLEM: %s" % problem)
    slowest = max(hooks, key=lambda run: run["ms"], default=None)
    print(
        "%s %s: claude %.2f s, total %.2f s, %d hook runs%s, network %s, out %s"
        % (
            "FAIL" if problems else "PASS",
            name,
            claude_seconds,
            time.monotonic() - started,
            len(hooks),
            " (slowest %s %d ms)" % (slowest["label"], slowest["ms"]) if slowest else "",
            "loopback-only" if isolated else "NOT ISOLATED",
            out,
        )
    )
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

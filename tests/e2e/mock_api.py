#!/usr/bin/env python3
"""A scripted stand-in for the Anthropic Messages API, for the end-to-end tests.

Claude Code is pointed at it with ANTHROPIC_BASE_URL. It listens on
127.0.0.1 only, writes every request it receives to a JSON-lines log, and
answers the calls of Claude Code's main loop from a script, one turn per
call, in order. Calls that are not part of the main loop (no tool list, or a
one-token probe) get a short fixed text and use no turn. Both streaming (SSE)
and plain JSON replies are supported.

The script is JSON: {"turns": [TURN, ...]}, where a TURN holds
  "text": "..."                     an assistant text block;
  "tool_use": {"name", "input"}     one tool call (or a list of them, for
                                    parallel calls); after the text, if any;
  "content": [blocks]               raw content blocks instead of the above;
  "stop_reason": "..."              default: tool_use if a tool is called,
                                    else end_turn;
  "error": {"status": 429, ...}     an API error instead of a message (see
                                    `error_reply`): a rate limit, an
                                    overload, a server error;
  "usage": {"input_tokens": N, ...} the usage the reply reports (default:
                                    input from the request's size, 8 output);
  "expect": {...}                   checks on the request this turn answers
                                    (see `check_expectations`).
Any string in a turn may hold {{NAME}} placeholders, filled in from the
substitutions given to the server (PROJECT, HOME, OUT, BIN_DIR, ...).

When the turns run out the reply is the text SCRIPT_EXHAUSTED, and the log
says so; the runner treats that as a failure.

Standalone use (for poking at Claude Code by hand):
    python3 mock_api.py --script script.json --log requests.jsonl [--port N]
        [--port-file FILE] [--subst NAME=VALUE]...
"""

import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT_EXHAUSTED = "MOCK-SCRIPT-EXHAUSTED"
SIDE_CALL_TEXT = "ok"
PLACEHOLDER = re.compile(r"\{\{([A-Z0-9_]+)\}\}")


def fill_placeholders(value, substitutions):
    """Replaces {{NAME}} in every string of a JSON value; unknown names stay."""
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: substitutions.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [fill_placeholders(item, substitutions) for item in value]
    if isinstance(value, dict):
        return {key: fill_placeholders(item, substitutions) for key, item in value.items()}
    return value


def call_kind(body):
    """'main' for a call of the agent's main loop, else what kind of side call.

    The main loop always offers tools. Title and topic generation, summaries
    and quota probes offer none, or ask for a single token.
    """
    if 0 < (body.get("max_tokens") or 0) <= 1:
        return "probe"
    if not body.get("tools"):
        return "side"
    return "main"


def block_text(block):
    """The text a content block carries (a tool result's text parts joined)."""
    if block.get("type") == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
        return content or ""
    if block.get("type") == "tool_use":
        return json.dumps(block.get("input", {}))
    return block.get("text") or ""


def new_input_messages(body):
    """The messages after the last assistant message: what is new to the model
    in this call (the prompt and session context on the first call; tool
    results, hook context and Stop feedback afterwards)."""
    messages = body.get("messages") or []
    last_assistant = -1
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            last_assistant = index
    return messages[last_assistant + 1:]


def message_blocks(messages):
    """(role, block type, is_error, text) for every block of the messages."""
    for message in messages:
        content = message.get("content")
        role = message.get("role")
        if isinstance(content, str):
            yield role, "text", False, content
            continue
        for block in content or []:
            if isinstance(block, dict):
                yield role, block.get("type"), bool(block.get("is_error")), block_text(block)


def check_expectations(expect, body):
    """Checks one turn's "expect" against the new input of the request:
      "contains": [s, ...]        each substring must appear;
      "not_contains": [s, ...]    none may appear;
      "matches": [regex, ...]     each must match somewhere (re.search, DOTALL);
      "tool_result_error": bool   true: some tool result is an error; false:
                                  there are tool results and none is an error.
    Returns {"ok": bool, "failures": [...]} (plus the new input when not ok).
    """
    blocks = list(message_blocks(new_input_messages(body)))
    text = "\n".join(block[3] for block in blocks)
    failures = []
    for wanted in expect.get("contains", []):
        if wanted not in text:
            failures.append("missing %r" % wanted)
    for unwanted in expect.get("not_contains", []):
        if unwanted in text:
            failures.append("unexpected %r" % unwanted)
    for pattern in expect.get("matches", []):
        if not re.search(pattern, text, re.DOTALL):
            failures.append("no match for /%s/" % pattern)
    if "tool_result_error" in expect:
        errors = [is_error for _, kind, is_error, _ in blocks if kind == "tool_result"]
        if expect["tool_result_error"]:
            if not any(errors):
                failures.append("expected a tool result with is_error, got %s" % errors)
        elif not errors or any(errors):
            failures.append("expected successful tool results, got is_error %s" % errors)
    result = {"ok": not failures, "failures": failures}
    if failures:
        result["new_input"] = text[-6000:]
    return result


class Script:
    """The turns, consumed one per main-loop call, under a lock (Claude Code
    may send calls on several connections)."""

    def __init__(self, turns, substitutions):
        self.turns = turns
        self.substitutions = substitutions
        self.next_index = 0
        self.tool_ids = 0
        self.message_ids = 0
        self.lock = threading.Lock()

    def take(self):
        with self.lock:
            if self.next_index >= len(self.turns):
                return None, None
            index = self.next_index
            self.next_index += 1
            return index, fill_placeholders(self.turns[index], self.substitutions)

    def fresh_tool_id(self):
        with self.lock:
            self.tool_ids += 1
            return "toolu_e2e_%03d" % self.tool_ids

    def fresh_message_id(self):
        with self.lock:
            self.message_ids += 1
            return "msg_e2e_%03d" % self.message_ids


def reply_blocks(turn, script):
    """The assistant content blocks and stop reason for one turn."""
    if "content" in turn:
        blocks = [dict(block) for block in turn["content"]]
    else:
        blocks = []
        if turn.get("text"):
            blocks.append({"type": "text", "text": turn["text"]})
        tool_uses = turn.get("tool_use") or []
        if isinstance(tool_uses, dict):
            tool_uses = [tool_uses]
        for tool_use in tool_uses:
            blocks.append(dict(tool_use, type="tool_use"))
        if not blocks:
            blocks.append({"type": "text", "text": ""})
    for block in blocks:
        block.setdefault("type", "tool_use" if "name" in block else "text")
        if block["type"] == "tool_use":
            block.setdefault("id", script.fresh_tool_id())
            block.setdefault("input", {})
    calls_tool = any(block["type"] == "tool_use" for block in blocks)
    return blocks, turn.get("stop_reason") or ("tool_use" if calls_tool else "end_turn")


def usage(input_tokens, output_tokens):
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def whole_message(message_id, model, blocks, stop_reason, counts):
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(counts),
    }


def error_reply(error):
    """(status, headers, body) for a turn's "error": {"status": 429,
    "type": "rate_limit_error", "message": "...", "headers": {...}}. Only
    `status` is needed; the type and message default to what the API sends
    for that status. `headers` are sent as given (for example
    `anthropic-ratelimit-unified-status: rejected` with a reset time;
    `"reset_in": N` turns a header value "RESET" into the time N seconds
    from the reply)."""
    status = int(error.get("status", 500))
    default_type = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error"}.get(status, "api_error")
    body = {
        "type": "error",
        "error": {"type": error.get("type", default_type), "message": error.get("message", "mock %d" % status)},
    }
    headers = {name: str(value) for name, value in (error.get("headers") or {}).items()}
    if "reset_in" in error:
        # A header given as "RESET" becomes the epoch second `reset_in`
        # seconds from the reply (a limit that resets soon).
        reset = str(int(time.time()) + int(error["reset_in"]))
        headers = {name: reset if value == "RESET" else value for name, value in headers.items()}
    return status, headers, json.dumps(body).encode("utf-8")


def chunks(text, size):
    return [text[at:at + size] for at in range(0, len(text), size)] or [""]


def event_stream(message_id, model, blocks, stop_reason, counts):
    """The same message as server-sent events, each block's content split
    over several deltas so that Claude Code's reassembly is exercised."""
    events = []

    def emit(name, data):
        data["type"] = name
        events.append("event: %s\ndata: %s\n\n" % (name, json.dumps(data)))

    start = whole_message(message_id, model, [], None, dict(counts, output_tokens=1))
    emit("message_start", {"message": start})
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            emit("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            for piece in chunks(block["text"], 40):
                emit("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}})
        elif block["type"] == "tool_use":
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            emit("content_block_start", {"index": index, "content_block": opening})
            for piece in chunks(json.dumps(block["input"]), 60):
                emit("content_block_delta", {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})
        else:
            raise ValueError("the mock cannot stream a %r block" % block["type"])
        emit("content_block_stop", {"index": index})
    emit("message_delta", {"delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": counts["output_tokens"]}})
    emit("message_stop", {})
    return "".join(events).encode("utf-8")


class MockApi:
    """The server. `start()` binds 127.0.0.1 on `port` (0: any free port) and
    serves from a daemon thread; `stop()` shuts it down."""

    def __init__(self, script, log_path, substitutions=None, port=0):
        self.script = Script(script.get("turns", []), dict(substitutions or {}))
        self.log_path = log_path
        self.log_lock = threading.Lock()
        self.sequence = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self.server.daemon_threads = True
        self.thread = None

    @property
    def port(self):
        return self.server.server_address[1]

    def start(self):
        # A short poll interval keeps `stop()` quick.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self.port

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def log(self, record):
        with self.log_lock:
            self.sequence += 1
            record = dict(record, seq=self.sequence, time=round(time.time(), 3))
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(record, ensure_ascii=False) + "\n")

    def answer(self, path, body):
        """(status, content type, bytes) for one request; logs it."""
        record = {"method": "POST", "path": path, "body": body}
        route = path.split("?", 1)[0]
        if route.endswith("/v1/messages/count_tokens"):
            self.log(dict(record, kind="count_tokens"))
            return 200, "application/json", b'{"input_tokens": 100}', {}
        if not route.endswith("/v1/messages") or not isinstance(body, dict):
            self.log(dict(record, kind="other"))
            return 200, "application/json", b"{}", {}
        kind = call_kind(body)
        if kind == "main":
            index, turn = self.script.take()
            if turn is None:
                kind, turn = "main-exhausted", {"text": SCRIPT_EXHAUSTED}
            else:
                record["turn"] = index
                if turn.get("expect"):
                    record["expect"] = check_expectations(turn["expect"], body)
                if turn.get("capture"):
                    turn = self.capture(turn, body, record)
        else:
            turn = {"text": SIDE_CALL_TEXT}
        if turn.get("error"):
            status, headers, payload = error_reply(turn["error"])
            record.update(kind=kind, reply={"error": turn["error"]})
            self.log(record)
            return status, "application/json", payload, headers
        blocks, stop_reason = reply_blocks(turn, self.script)
        record.update(kind=kind, reply={"content": blocks, "stop_reason": stop_reason})
        self.log(record)
        model = body.get("model") or "claude-e2e-mock"
        counts = dict(usage(max(1, len(json.dumps(body)) // 4), 8), **(turn.get("usage") or {}))
        message_id = self.script.fresh_message_id()
        if body.get("stream"):
            return 200, "text/event-stream", event_stream(message_id, model, blocks, stop_reason, counts), {}
        reply = whole_message(message_id, model, blocks, stop_reason, counts)
        return 200, "application/json", json.dumps(reply).encode("utf-8"), {}

    def capture(self, turn, body, record):
        """A turn's "capture": {"NAME": regex with one group} takes text from
        the call's new input, as a model copies what a tool printed; each
        {{NAME}} in the turn becomes the group. A pattern that matches nothing
        fails the turn's expectations."""
        text = "\n".join(block[3] for block in message_blocks(new_input_messages(body)))
        captured = {}
        failures = []
        for name, pattern in turn["capture"].items():
            match = re.search(pattern, text, re.DOTALL)
            if match:
                captured[name] = match.group(1)
            else:
                failures.append("capture %s: no match for /%s/" % (name, pattern))
        if failures:
            expect = record.get("expect") or {"ok": True, "failures": []}
            expect = dict(expect, ok=False, failures=expect.get("failures", []) + failures)
            expect.setdefault("new_input", text[-6000:])
            record["expect"] = expect
        return fill_placeholders(turn, captured)

    def _handler_class(self):
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                # The request log is ours; the default access log on stderr is noise.
                pass

            def send(self, status, content_type, payload, headers=None):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("request-id", "req_e2e_%d" % mock.sequence)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                try:
                    self.send(*mock.answer(self.path, body))
                except Exception as error:  # a mock bug must show up in the log, not hang the client
                    mock.log({"method": "POST", "path": self.path, "kind": "mock-error", "error": repr(error)})
                    self.send(500, "application/json", json.dumps({"type": "error", "error": {"type": "api_error", "message": repr(error)}}).encode())

            def do_GET(self):
                mock.log({"method": self.command, "path": self.path, "kind": "other"})
                self.send(200, "application/json", b"{}")

            do_HEAD = do_GET
            do_PUT = do_POST
            do_PATCH = do_POST
            do_DELETE = do_GET

        return Handler


def main():
    parser = argparse.ArgumentParser(description="Scripted mock of the Anthropic Messages API (127.0.0.1 only).")
    parser.add_argument("--script", required=True, help="the script JSON")
    parser.add_argument("--log", required=True, help="where to append one JSON line per request")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any free one)")
    parser.add_argument("--port-file", help="write the port here once listening")
    parser.add_argument("--subst", action="append", default=[], metavar="NAME=VALUE", help="a {{NAME}} substitution")
    args = parser.parse_args()
    with open(args.script, encoding="utf-8") as file:
        script = json.load(file)
    substitutions = dict(item.split("=", 1) for item in args.subst)
    mock = MockApi(script, args.log, substitutions, args.port)
    port = mock.start()
    if args.port_file:
        with open(args.port_file, "w", encoding="utf-8") as file:
            file.write("%d\n" % port)
    print("mock Messages API on http://127.0.0.1:%d" % port, file=sys.stderr, flush=True)
    try:
        mock.thread.join()
    except KeyboardInterrupt:
        mock.stop()


if __name__ == "__main__":
    main()

"""The real Claude Code, run headless against a mock of the Messages API, for the hook's end-to-end tests.

The mock answers the first request that offers the Bash tool with one `tool_use` of a given command (streamed
SSE: message_start, a tool_use content block, message_delta with stop_reason tool_use, message_stop) and
records the `tool_result` that the next request carries; every other request gets a short text answer.
Claude Code runs with a HOME of its own (its `.claude.json` marks the project trusted or not), an API key
for the mock, and no traffic but to the mock."""

import json
import os
import shutil
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The pinned version scripts/setup installs (npm `@anthropic-ai/claude-code-linux-x64`, a native binary).
VERSION = "2.1.332"
CACHE = os.environ.get("CORDON_CLAUDE_CACHE", "/var/cache/cordon-test/claude-code-" + VERSION)
BINARY = os.path.join(CACHE, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")


def binary():
    """The Claude Code binary; fails loudly (never skips) when scripts/setup has not installed it."""
    path = os.environ.get("CORDON_CLAUDE_BIN", BINARY)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"Claude Code {VERSION} is not installed at {path}: run scripts/setup (it installs "
                           "npm @anthropic-ai/claude-code-linux-x64@" + VERSION + " there)")
    return path


def _sse(events):
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


class MockApi:
    """A Messages API on 127.0.0.1 (port 0). `command` is what the model asks Bash to run."""

    def __init__(self):
        self.command = None
        self.sequence = []  # when set: one Bash call per command, in order, in one conversation
        self.extra_input = {}
        self.results = []  # the tool_result blocks received, in order
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def reply(self, status, body, content_type="application/json"):
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self.reply(404, b"{}")

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    return self.reply(400, b"{}")
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    return self.reply(200, json.dumps({"input_tokens": 10}).encode())
                self.reply(200, _sse(api.answer(body)), "text/event-stream")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, body):
        messages = body.get("messages") or [{}]
        content = messages[-1].get("content")
        results = [c for c in content if isinstance(c, dict) and c.get("type") == "tool_result"] \
            if isinstance(content, list) else []
        tools = [t.get("name") for t in body.get("tools", [])]
        start = ("message_start", {"type": "message_start", "message": {
            "id": "msg_mock", "type": "message", "role": "assistant", "model": body.get("model", "mock"),
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}})
        with self.lock:
            self.results.extend(results)
            # tool_use blocks, not messages: Claude Code merges consecutive assistant turns into one message.
            asked_count = sum(1 for m in messages if m.get("role") == "assistant" and isinstance(
                m.get("content"), list) for c in m["content"] if isinstance(c, dict) and c.get("type") == "tool_use")
            asked = asked_count > 0
            sequence = list(self.sequence)
        command, tool_id = self.command, "toolu_mock01"
        if sequence and "Bash" in tools:
            # The next command of the sequence once the previous one's result came back.
            if asked_count < len(sequence):
                command, tool_id, results, asked = sequence[asked_count], f"toolu_seq{asked_count:02d}", [], False
            else:
                command = None
        if "Bash" in tools and not results and not asked and command is not None:
            tool_input = dict(self.extra_input, command=command, description="run it")
            return [start,
                    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                        "type": "tool_use", "id": tool_id, "name": "Bash", "input": {}}}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                        "type": "input_json_delta", "partial_json": json.dumps(tool_input)}}),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use",
                                                                          "stop_sequence": None},
                                       "usage": {"output_tokens": 5}}),
                    ("message_stop", {"type": "message_stop"})]
        return [start,
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": "done"}}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                      "stop_sequence": None},
                                   "usage": {"output_tokens": 5}}),
                ("message_stop", {"type": "message_stop"})]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def result_text(result):
    content = result.get("content")
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return content or ""


class Outcome:
    """What Claude Code did with one Bash call: `ran` (the tool ran; `output` is its tool_result text) or
    `refused` (denied or asked: headless, an ask is a refusal; `output` says which), plus the final JSON."""

    def __init__(self, kind, output, final, stderr):
        self.kind, self.output, self.final, self.stderr = kind, output, final, stderr

    def __repr__(self):
        return f"Outcome({self.kind}, {self.output[:200]!r})"


class Session:
    """A project directory and a HOME of its own for Claude Code; trusted or not."""

    def __init__(self, trusted=True, root=None):
        self.root = tempfile.mkdtemp(prefix="cordon-cc-", dir=root or "/var/tmp")
        self.home = os.path.join(self.root, "home")
        self.project = os.path.join(self.root, "project")
        os.makedirs(os.path.join(self.project, ".claude"))
        os.makedirs(os.path.join(self.home, ".claude"))
        self.set_trusted(trusted)
        self.api = MockApi()

    def set_trusted(self, trusted):
        state = {"hasCompletedOnboarding": True, "projects": {
            self.project: {"hasTrustDialogAccepted": bool(trusted), "allowedTools": []}}}
        with open(os.path.join(self.home, ".claude.json"), "w") as f:
            json.dump(state, f)

    def write_settings(self, settings, name="settings.json", where=None):
        path = os.path.join(where or os.path.join(self.project, ".claude"), name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(settings, f)
        return path

    def env(self):
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home,
                "ANTHROPIC_BASE_URL": self.api.url, "ANTHROPIC_API_KEY": "sk-ant-mock",
                "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "TERM": "dumb"}

    def run(self, command, extra_input=None, args=(), timeout=120):
        """Claude Code runs `claude -p` in the project; the model asks for Bash(command) once."""
        with self.api.lock:
            self.api.command = command
            self.api.extra_input = extra_input or {}
            self.api.results = []
        r = subprocess.run([binary(), "-p", "run the command", "--output-format", "json", *args],
                           cwd=self.project, env=self.env(), capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        try:
            final = json.loads(r.stdout)
        except ValueError:
            raise AssertionError(f"Claude Code did not answer with JSON (exit {r.returncode}): "
                                 f"{r.stdout[-2000:]} {r.stderr[-2000:]}")
        with self.api.lock:
            results = list(self.api.results)
        if not results:
            raise AssertionError(f"no tool_result reached the mock: {r.stdout[-2000:]} {r.stderr[-2000:]}")
        text = result_text(results[0])
        # Claude Code lists every call it did not run (a deny, an ask it could not put to anyone headless, a
        # hook's deny or ask) in permission_denials; a command that ran and failed is not there.
        denied = any(d.get("tool_use_id") == "toolu_mock01" for d in final.get("permission_denials") or [])
        return Outcome("refused" if denied else "ran", text, final, r.stderr)

    def run_sequence(self, commands, args=(), timeout=180):
        """One `claude -p` whose model asks for Bash(command) for each of `commands` in turn, each after the
        previous one's result: the tool_result texts in order, and the final JSON."""
        with self.api.lock:
            self.api.command = None
            self.api.sequence = list(commands)
            self.api.results = []
        try:
            r = subprocess.run([binary(), "-p", "run the commands", "--output-format", "json", *args],
                               cwd=self.project, env=self.env(), capture_output=True, text=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
        finally:
            with self.api.lock:
                self.api.sequence = []
        try:
            final = json.loads(r.stdout)
        except ValueError:
            raise AssertionError(f"Claude Code did not answer with JSON (exit {r.returncode}): "
                                 f"{r.stdout[-2000:]} {r.stderr[-2000:]}")
        with self.api.lock:
            seen, results = set(), []
            for x in self.api.results:  # each request carries the results so far: one per tool_use id
                if x.get("tool_use_id") not in seen:
                    seen.add(x.get("tool_use_id"))
                    results.append(result_text(x))
        return results, final

    def close(self):
        self.api.close()
        shutil.rmtree(self.root, ignore_errors=True)

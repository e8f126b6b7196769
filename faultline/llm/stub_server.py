"""A model endpoint that misbehaves on purpose: an OpenAI-style chat server on 127.0.0.1, for tests and benchmarks.

litellm reaches it as any OpenAI-compatible provider (model ``openai/<behaviour>``, base URL
`StubServer.base_url`); the model name picks the behaviour (``ok``, ``slow``, ``status-<code>``, ``nonjson``,
``badschema``, ``huge``, ``flaky-<n>``, ``context-<n>``) and every request is kept, with how many it answered
at once. The behaviours: docs/llm.md#models-for-tests.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

HUGE_BYTES = 1_000_000
Answer = str | Callable[[list[dict[str, Any]]], str]


@dataclass
class Request:
    """One request the server received."""

    model: str
    messages: list[dict[str, Any]]
    at: float
    body: dict[str, Any] = field(default_factory=dict)  # the whole request: max_tokens, response_format, ...
    auth: str = ""  # the Authorization header as sent


@dataclass
class StubServer:
    """The server and what it was asked; use as a context manager (it stops and joins its thread on exit)."""

    answer: Answer = '{"ok": true}'
    delay_s: float = 5.0
    requests: list[Request] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    max_in_flight: int = 0  # the most requests it was answering at once

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``.../v1``) to give litellm (``api_base`` or ``OPENAI_API_BASE``)."""
        assert self._server is not None, "start the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def count(self, model: str) -> int:
        """How many requests named `model` (without the ``openai/`` prefix)."""
        with self._lock:
            return sum(r.model == model for r in self.requests)

    def start(self) -> Self:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                model = str(body.get("model", ""))
                with stub._lock:
                    stub.requests.append(Request(model, body.get("messages", []), time.monotonic(), body,
                                                 self.headers.get("Authorization", "")))
                    seen = sum(r.model == model for r in stub.requests)
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                try:
                    status, payload = stub._respond(model, body.get("messages", []), seen)
                finally:
                    with stub._lock:
                        stub.in_flight -= 1
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout): nothing to answer

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="llm-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _respond(self, model: str, messages: list[dict[str, Any]], seen: int) -> tuple[int, dict[str, Any]]:
        if model.startswith("status-"):
            code = int(model.split("-", 1)[1])
            return code, {"error": {"message": f"stub: status {code}", "type": "stub_error", "code": code}}
        if model.startswith("flaky-") and seen <= int(model.split("-", 1)[1]):
            return 429, {"error": {"message": "stub: rate limited", "type": "rate_limit_error", "code": 429}}
        if model.startswith("context-"):  # a server with a context window of <n> tokens (4 characters each)
            window, size = int(model.split("-", 1)[1]), sum(len(str(m.get("content", ""))) for m in messages) // 4
            if size > window:
                return 400, {"error": {"message": f"This model's maximum context length is {window} tokens. "
                                                  f"However, your messages resulted in {size} tokens.",
                                       "type": "invalid_request_error", "code": "context_length_exceeded"}}
        if model == "slow":
            time.sleep(self.delay_s)
        if model == "nonjson":
            text = "I think the root cause is probably BGP, but I cannot answer in JSON today."
        elif model == "badschema":
            text = json.dumps({"unexpected": ["shape"], "score": "high"})
        elif model == "huge":
            text = json.dumps({"padding": "x" * HUGE_BYTES})
        else:
            text = self.answer(messages) if callable(self.answer) else self.answer
        return 200, _completion(model, text)


def _completion(model: str, text: str) -> dict[str, Any]:
    return {"id": "stub-1", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": max(1, len(text) // 4),
                      "total_tokens": 10 + max(1, len(text) // 4)}}

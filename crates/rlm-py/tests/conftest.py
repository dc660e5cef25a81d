"""A fake model provider for the package's tests: an HTTP server on 127.0.0.1 speaking OpenAI's
chat completions wire format exactly (whole JSON replies, or SSE chunks with a final usage
chunk and ``[DONE]`` when the request streams). Each request gets the next reply scripted for
its model, else what the responder computes from the request, else a 400 error."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Deque, Dict, List, Optional

import pytest

Reply = Dict[str, Any]  # {"text": str, "delay": seconds, "status": int, "error": str}


class FakeProvider:
    def __init__(self) -> None:
        self.scripts: Dict[str, Deque[Reply]] = defaultdict(deque)
        self.responder: Optional[Callable[[Dict[str, Any]], Reply]] = None
        self.requests: List[Dict[str, Any]] = []
        self.lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                body["_authorization"] = self.headers.get("Authorization")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                with provider.lock:
                    provider.requests.append(body)
                    queue = provider.scripts.get(body.get("model", ""))
                    reply = queue.popleft() if queue else None
                if reply is None and provider.responder is not None:
                    reply = provider.responder(body)
                if reply is None:
                    return self._send(
                        400,
                        {"error": {"message": f"nothing scripted for {body.get('model')}"}},
                    )
                time.sleep(reply.get("delay", 0))
                if "status" in reply:
                    return self._send(
                        reply["status"], {"error": {"message": reply.get("error", "failed")}}
                    )
                text = reply["text"]
                usage = {
                    "prompt_tokens": 100,
                    "completion_tokens": max(1, len(text) // 4),
                    "total_tokens": 100 + max(1, len(text) // 4),
                }
                if body.get("stream"):
                    return self._stream(body.get("model", ""), text, usage)
                self._send(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": usage,
                    },
                )

            def _send(self, status: int, payload: Dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, model: str, text: str, usage: Dict[str, int]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

                def event(payload: Any) -> None:
                    data = f"data: {payload}\n\n".encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()

                def chunk(delta: Dict[str, Any], finish: Optional[str]) -> str:
                    return json.dumps(
                        {
                            "id": "chatcmpl-fake",
                            "object": "chat.completion.chunk",
                            "created": int(time.time()),
                            "model": model,
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                        }
                    )

                event(chunk({"role": "assistant", "content": ""}, None))
                for start in range(0, len(text), 16):
                    event(chunk({"content": text[start : start + 16]}, None))
                event(chunk({}, "stop"))
                event(
                    json.dumps(
                        {
                            "id": "chatcmpl-fake",
                            "object": "chat.completion.chunk",
                            "created": int(time.time()),
                            "model": model,
                            "choices": [],
                            "usage": usage,
                        }
                    )
                )
                event("[DONE]")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client that closes its kept-alive connection is not an error here.
                import sys

                if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def script(self, model: str, *texts: str) -> None:
        with self.lock:
            self.scripts[model].extend({"text": text} for text in texts)

    def script_reply(self, model: str, reply: Reply) -> None:
        with self.lock:
            self.scripts[model].append(reply)

    def requests_for(self, model: str) -> List[Dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r.get("model") == model]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Any:
    provider = FakeProvider()
    yield provider
    provider.close()


@pytest.fixture(autouse=True)
def isolated(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user configuration, no real keys, logs and state under the test's directory."""
    for name in list(__import__("os").environ):
        # RLM_TEST_* name the test servers (PostgreSQL); rlm itself never reads them.
        if name.startswith("RLM_TEST_"):
            continue
        if name.startswith(("RLM_", "OPENAI_", "ANTHROPIC_", "OPENROUTER_")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


def last_user_message(request: Dict[str, Any]) -> str:
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content)
            return content or ""
    return ""

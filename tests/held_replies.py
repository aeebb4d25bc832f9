"""An OpenAI-compatible stub that answers the first few distinct prompts and holds every later request open until
released: a run's worker caught waiting on a reply, for the tests that stop or kill it (test_runs_workers,
test_worker_exits). A test subclasses :class:`HoldingHandler` (its state is class-level, read by the test) and
serves it through :func:`serving`."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator


class HoldingHandler(BaseHTTPRequestHandler):
    """Answers ``[[3]]`` to the first ``answer_first`` distinct prompts (and to any prompt asked again) and holds
    every other request until ``release`` is set, then answers it too. ``answered`` counts the replies sent per
    prompt; ``held`` the requests held."""

    answer_first = 3
    answered: dict[str, int] = {}
    held = 0
    release = threading.Event()

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        prompt = body["messages"][-1]["content"]
        cls = type(self)
        if len(cls.answered) >= cls.answer_first and prompt not in cls.answered and not cls.release.is_set():
            cls.held += 1
            cls.release.wait()
            return  # whoever asked has been stopped meanwhile
        cls.answered[prompt] = cls.answered.get(prompt, 0) + 1
        data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "[[3]]"}}],
                           "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the worker that asked is gone
            pass


def serving(handler: type[HoldingHandler]) -> Iterator[str]:
    """For a fixture (``yield from serving(...)``): ``handler``'s state reset, served on a free local port; yields
    the base URL, then releases every held request and stops the server."""
    handler.answered, handler.held, handler.release = {}, 0, threading.Event()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        handler.release.set()
        httpd.shutdown()
        httpd.server_close()

"""An OpenAI-compatible chat server that answers at once, for scoring benchmarks and tests at scale.

It stands in for a vLLM or OpenAI endpoint whose model time is zero, so what is measured is the client
side: the engine's per-item work against the plain ``openai`` client's. It runs in its own process
(:class:`StubServer`), so its threads never compete with the measured client for the GIL.

Each reply is a JSON score, ``{"score": k}`` with ``k`` in 1..5 fixed by the prompt's text, so the same
prompt always gets the same answer wherever it was sent from (one process, several, a Ray worker). It
also answers ``GET /v1/models``, ``GET /stats`` (requests answered so far, and the wall-clock time the first
chat request arrived: a command's start-up is measured up to it; ``GET /reset`` sets them back to none) and
``POST /v1/embeddings`` (hashed word counts), and with
``--rate-limit-every N`` it answers every N-th chat request with a 429, as a rate-limited API does. With
``--refuse-longer-than N`` a prompt of more than N characters gets a 400 naming the model's context, as vLLM
answers a prompt over it; with ``--status-for-all S`` every chat request gets status S (401: a bad key,
404: a model name the server does not serve). ``--fail-containing TEXT`` answers a 500 to every prompt holding
TEXT (a text that crashes the server, every time), ``--hang-containing TEXT`` answers such a prompt only after
``--hang-seconds`` (a server stuck on it; ``*`` for every prompt). With ``--follow-humans summeval,hanna`` it
answers as a judge at the human level plus noise (``--noise``, sd on a 1-5 scale, stretched to each aspect's) in the shape each
request's JSON schema asks for (:mod:`.stub_humans`), so a method's whole run can be checked against a judge that
agrees.

Run alone: ``python -m judge_engine.bench.stub_server --port 8000`` (prints the port it listens on).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "stub-model"


def _request_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks its reply to follow, in any of the forms the client sends."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    return fmt.get("schema") or body.get("guided_json")


def stub_score(messages: list[dict[str, Any]]) -> int:
    """The score the stub gives a prompt (1..5), a pure function of its messages' text."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    return 1 + hashlib.sha256(text.encode("utf-8")).digest()[0] % 5


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the clients reuse their connections, as with a real server
    rate_limit_every = 0
    refuse_longer_than = 0
    status_for_all = 0
    fail_containing = ""
    hang_containing = ""
    hang_seconds = 0.0
    follower: Any = None
    answered = 0
    chat_requests = 0
    embedding_requests = 0
    first_request_at: float | None = None  # time.time() when the first chat request since the start or a reset came
    first_by_model: dict[str, float] = {}  # the same, per model name asked for (a client's requests told apart)
    bodies_digest = 0  # XOR of each chat request body's hash: two clients that sent the same bodies, in any order, agree
    lock = threading.Lock()

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "stub"}]})
        elif self.path.endswith("/stats"):
            cls = type(self)
            self._send(200, {"answered": cls.answered, "chat_requests": cls.chat_requests,
                             "embedding_requests": cls.embedding_requests,
                             "first_request_at": cls.first_request_at, "first_by_model": cls.first_by_model,
                             "bodies_digest": f"{cls.bodies_digest:016x}"})
        elif self.path.endswith("/reset"):
            cls = type(self)
            with cls.lock:
                cls.answered, cls.chat_requests, cls.first_request_at, cls.bodies_digest = 0, 0, None, 0
                cls.embedding_requests, cls.first_by_model = 0, {}
            self._send(200, {"reset": True})
        else:
            self._send(404, {"error": {"message": "no route"}})

    def do_POST(self) -> None:
        arrived = time.time()
        cls = type(self)
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.loads(raw or b"{}")
        if self.path.endswith("/embeddings"):
            return self._send(200, _embeddings(body, cls))
        if cls.first_request_at is None:
            with cls.lock:
                cls.first_request_at = cls.first_request_at or arrived
        digest = int.from_bytes(hashlib.sha256(raw).digest()[:8], "big")
        with cls.lock:
            cls.bodies_digest ^= digest
        if str(body.get("model")) not in cls.first_by_model:
            with cls.lock:
                cls.first_by_model.setdefault(str(body.get("model")), arrived)
        if cls.status_for_all:
            with cls.lock:
                cls.chat_requests += 1
            said = {401: "Incorrect API key provided", 404: f"The model `{body.get('model')}` does not exist."}
            return self._send(cls.status_for_all, {"error": {"message": said.get(cls.status_for_all, "refused"),
                                                             "type": "invalid_request_error"}})
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
        if cls.hang_containing and (cls.hang_containing == "*" or cls.hang_containing in text):
            time.sleep(cls.hang_seconds)  # bounded: the stub stops with its test
        if cls.fail_containing and cls.fail_containing in text:
            with cls.lock:
                cls.chat_requests += 1
            return self._send(500, {"error": {"message": "Internal server error: the tokenizer crashed",
                                              "type": "server_error"}})
        chars = sum(len(str(m.get("content", ""))) for m in body.get("messages") or [])
        if cls.refuse_longer_than and chars > cls.refuse_longer_than:
            with cls.lock:
                cls.chat_requests += 1
            return self._send(400, {"object": "error", "message": f"This model's maximum context length is "
                                    f"{cls.refuse_longer_than} characters. However, you requested {chars} characters.",
                                    "type": "BadRequestError", "code": 400})
        with cls.lock:
            cls.chat_requests += 1
            limited = cls.rate_limit_every and cls.chat_requests % cls.rate_limit_every == 0
            if not limited:
                cls.answered += 1
        if limited:
            return self._send(429, {"error": {"message": "Rate limit reached", "type": "requests",
                                              "code": "rate_limit_exceeded"}}, {"retry-after": "0"})
        messages = body.get("messages") or []
        content = (cls.follower.reply(messages, _request_schema(body)) if cls.follower is not None
                   else json.dumps({"score": stub_score(messages)}))
        n = int(body.get("n") or 1)
        choice: dict[str, Any] = {"finish_reason": "stop", "message": {"role": "assistant", "content": content}}
        if cls.follower is not None and body.get("logprobs"):  # a judge that is unsure between neighbouring scores
            choice["logprobs"] = {"content": cls.follower.logprobs(messages, content, int(body.get("top_logprobs") or 0))}
        self._send(200, {"id": f"stub-{cls.answered}", "object": "chat.completion", "created": 0, "model": MODEL,
                         "choices": [{"index": i, **choice} for i in range(n)],
                         "usage": usage(messages, content, n)})


_TOKEN = re.compile(r"[A-Za-z]{1,8}|\d|[^\sA-Za-z\d]")
"""A stand-in tokenizer independent of the estimate's characters over 4: letters in pieces of up to 8 (a long
word is two or three sub-word tokens), each digit and each punctuation mark one. ``{"score": 4}`` counts 7, as
in SmolLM2's and Llama 3's tokenizers (the fixed 100 prompt and 6 completion tokens it answered before made
every run's tokens a count of its requests, so no token estimate could be checked against it)."""

PER_MESSAGE_TOKENS = 4
"""Tokens a chat template adds around each message (role markers)."""


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def usage(messages: list[dict[str, Any]], content: str, n: int = 1) -> dict[str, int]:
    """The ``usage`` of a reply: its prompt's tokens and its ``n`` choices' (:func:`count_tokens`)."""
    prompt = sum(count_tokens(str(m.get("content", ""))) + PER_MESSAGE_TOKENS for m in messages)
    completion = count_tokens(content) * n
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _embeddings(body: dict[str, Any], cls: type[_Handler]) -> dict[str, Any]:
    """An embeddings reply: each text's words hashed into ``dimensions`` counts, as a unit vector (texts that share
    words are near), for a client that finds similar texts (MLflow's MemAlign, issue 66)."""
    texts = body.get("input")
    texts = [texts] if isinstance(texts, str) else [str(t) for t in texts or []]
    size = int(body.get("dimensions") or 64)
    data, words = [], 0
    for i, text in enumerate(texts):
        vector = [0.0] * size
        for word in text.lower().split():
            vector[int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:4], "big") % size] += 1.0
            words += 1
        norm = sum(v * v for v in vector) ** 0.5 or 1.0
        data.append({"object": "embedding", "index": i, "embedding": [v / norm for v in vector]})
    with cls.lock:
        cls.embedding_requests += 1
    return {"object": "list", "data": data, "model": body.get("model", MODEL),
            "usage": {"prompt_tokens": words, "total_tokens": words}}


class _DeepBacklog(ThreadingHTTPServer):
    request_queue_size = 1024
    """Hundreds of clients connect at once at the benchmark's top level. A class attribute, read by ``listen()``
    when the server is made: set on the instance after that, the backlog stayed 5 and bursts of connections were
    dropped and retried by the clients a second later (issue 64)."""
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client stopped mid-request (the start-up benchmark ends each command at its first request): not news
        if not isinstance(sys.exc_info()[1], (ConnectionError, BrokenPipeError)):
            super().handle_error(request, client_address)


def serve(port: int = 0, *, rate_limit_every: int = 0, refuse_longer_than: int = 0, status_for_all: int = 0,
          fail_containing: str = "", hang_containing: str = "", hang_seconds: float = 0.0, follow_humans: str = "", noise: float = 0.5) -> None:
    """Serve until killed; the first line on standard output is the port."""
    if follow_humans:
        from .. import data
        from .stub_humans import HumanFollower

        _Handler.follower = HumanFollower([data.load_benchmark(n.strip()) for n in follow_humans.split(",")],
                                          noise=noise)
    _Handler.rate_limit_every = rate_limit_every
    _Handler.refuse_longer_than, _Handler.status_for_all = refuse_longer_than, status_for_all
    _Handler.fail_containing, _Handler.hang_containing = fail_containing, hang_containing
    _Handler.hang_seconds = hang_seconds
    httpd = _DeepBacklog(("127.0.0.1", port), _Handler)
    print(httpd.server_address[1], flush=True)
    httpd.serve_forever()


class StubServer:
    """The stub in a child process, for ``with StubServer() as stub: stub.base_url``."""

    def __init__(self, *, rate_limit_every: int = 0, refuse_longer_than: int = 0, status_for_all: int = 0,
                 fail_containing: str = "", hang_containing: str = "", hang_seconds: float = 0.0,
                 follow_humans: str = "", noise: float = 0.5, port: int = 0):
        self.follow_humans, self.noise = follow_humans, noise
        self.rate_limit_every = rate_limit_every
        self.refuse_longer_than, self.status_for_all = refuse_longer_than, status_for_all
        self.fail_containing, self.hang_containing, self.hang_seconds = fail_containing, hang_containing, hang_seconds
        self.process: subprocess.Popen | None = None
        self.port = port
        """0: any free port. A given one keeps the address (and so the call cache's keys) of an earlier stub."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        from urllib.request import urlopen

        with urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as reply:
            return json.loads(reply.read())

    def reset(self) -> None:
        """Counters and the first request's time back to none (a new measurement on the same server)."""
        from urllib.request import urlopen

        with urlopen(f"http://127.0.0.1:{self.port}/reset", timeout=10) as reply:
            reply.read()

    def __enter__(self) -> "StubServer":
        self.process = subprocess.Popen(
            [sys.executable, "-m", "judge_engine.bench.stub_server", "--port", str(self.port),
             "--rate-limit-every", str(self.rate_limit_every), "--refuse-longer-than", str(self.refuse_longer_than),
             "--status-for-all", str(self.status_for_all), "--fail-containing", self.fail_containing,
             "--hang-containing", self.hang_containing, "--hang-seconds", str(self.hang_seconds),
             "--follow-humans", self.follow_humans, "--noise", str(self.noise)],
            stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.strip().isdigit():
            self.process.kill()
            raise RuntimeError("the stub server did not start")
        self.port = int(line)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m judge_engine.bench.stub_server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rate-limit-every", type=int, default=0, help="answer every N-th request with a 429")
    parser.add_argument("--refuse-longer-than", type=int, default=0,
                        help="answer a prompt of more than N characters with a 400 (over the model's context)")
    parser.add_argument("--status-for-all", type=int, default=0,
                        help="answer every chat request with this status (401 bad key, 404 unknown model)")
    parser.add_argument("--fail-containing", default="", help="answer a 500 to every prompt holding this text")
    parser.add_argument("--hang-containing", default="",
                        help="answer a prompt holding this text (* for every prompt) only after --hang-seconds")
    parser.add_argument("--hang-seconds", type=float, default=0.0)
    parser.add_argument("--follow-humans", default="", metavar="NAMES",
                        help="answer as a judge at the human level plus noise on these built-in benchmarks "
                             "(comma-separated), in the shape of each request's JSON schema")
    parser.add_argument("--noise", type=float, default=0.5,
                        help="sd of that judge's noise on a 1-5 scale (stretched to each aspect's range)")
    args = parser.parse_args(argv)
    try:
        serve(args.port, rate_limit_every=args.rate_limit_every, refuse_longer_than=args.refuse_longer_than,
              status_for_all=args.status_for_all, fail_containing=args.fail_containing,
              hang_containing=args.hang_containing, hang_seconds=args.hang_seconds,
              follow_humans=args.follow_humans, noise=args.noise)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""An OpenAI-compatible endpoint on 127.0.0.1 that answers through the workbench's one LLM path.

A peer whose code calls its model itself (MLflow's MemAlign: its judge through MLflow's gateway client, its
guideline distillation through DSPy and litellm) is pointed at this bridge instead of at the model. Each chat
request is answered by the workbench :class:`~judge_engine.llm.LLM` of the run: the same backend, cache,
cost ledger, retries, concurrency and rate governor as every method's calls, so the peer's calls are counted
and priced like theirs and a second run costs nothing. The LLM path has no embeddings: an embeddings request is
sent on to the backend server's own ``/embeddings`` (``forward``; counted in the run's ledger and kept in the call cache per text),
or answered here by a lexical embedding (``local``: hashed word and word-pair counts, no call), or forwarded
until the server refuses and then answered here (``auto``).

Nothing here imports the peer: the bridge speaks HTTP and JSON only.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

from ..llm import LLM, BackendUnavailable, Completion, GenerationParams, LLMError, RequestRejected, SendingStopped, cache_key
from ..structured import as_param
from ..environment import environment

EMBEDDING_MODES = ("auto", "forward", "local")
DEFAULT_MAX_TOKENS = 1024
"""A request that names no reply length gets this many tokens (MLflow's judge names none: a rationale and a
score fit well inside it)."""
EMBEDDINGS_BACKEND = "embeddings"
"""The backend name forwarded embeddings are kept under in the call cache."""
BRIDGE_MODEL = "judge-workbench"
"""The model name the peer is told to use; the bridge answers with the run's backend whatever name it gets."""


def local_embeddings(texts: list[str], dimensions: int) -> list[list[float]]:
    """Unit vectors of hashed word and word-pair counts: texts that share words are near (no model, no call)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    vectors = HashingVectorizer(n_features=dimensions, ngram_range=(1, 2), alternate_sign=False,
                                norm="l2").transform(texts)
    return vectors.toarray().tolist()


def _text(content: Any) -> str:
    """A message's content as text (OpenAI's list-of-parts form joined)."""
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _schema(body: dict[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    return None


class OpenAIBridge:
    """``with OpenAIBridge(llm) as bridge:`` serves ``bridge.base_url`` until the block ends.

    ``embeddings`` is one of :data:`EMBEDDING_MODES`; ``embeddings_url`` and ``api_key`` are where ``forward``
    sends them (default: the backend's base URL and key). Counters: ``chat_requests`` (answered through the LLM
    path, cached or not), ``embedding_requests`` and ``embedding_tokens`` (sent to the server),
    ``local_embedding_requests``, ``failures``; ``fallback`` says why ``auto`` went local ("" while it forwards);
    ``stopped``: a request met a stopped run (:class:`~judge_engine.llm.SendingStopped`); ``fatal``: the first
    failure that is the backend's, not one request's (:class:`~judge_engine.llm.BackendUnavailable`: the server
    down, timing out or rate-limiting after the LLM path's retries), which the caller raises as every method's run
    does, so a flapping server pauses the peer's run instead of finishing it with items missing.
    """

    def __init__(self, llm: LLM, *, embeddings: str = "auto", embeddings_url: str = "", api_key: str = ""):
        if embeddings not in EMBEDDING_MODES:
            raise ValueError(f"embeddings={embeddings!r}: choose one of {', '.join(EMBEDDING_MODES)}")
        self.llm, self.mode = llm, embeddings
        config = llm.config
        server = config.backend == "openai" and getattr(llm.backend, "name", "") == "openai"
        if embeddings != "local" and not server:
            # only an OpenAI-compatible server has an /embeddings to forward to (a scripted backend, or an
            # estimate's rendering of the fit, has none: it must call no server)
            if embeddings == "forward" and config.backend != "openai":
                raise ValueError(f"embeddings='forward' needs an OpenAI-compatible server; the backend is "
                                 f"{config.backend}: use embeddings='local'")
            self.mode, self.fallback = "local", f"the {config.backend} backend serves no embeddings"
        else:
            self.fallback = ""
        base = (embeddings_url or config.base_url or "https://api.openai.com/v1").rstrip("/")
        self.embeddings_url = base if base.endswith("/embeddings") else base + "/embeddings"
        self.api_key = api_key or getattr(llm.backend, "_client_args", {}).get("api_key") \
            or os.environ.get(config.api_key_env, "")
        self.chat_requests = self.embedding_requests = self.embedding_tokens = 0
        self.local_embedding_requests = self.failures = 0
        self.stopped = False
        self.fatal: BackendUnavailable | None = None
        self.lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the bridge is not serving"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def embeddings_used(self) -> str:
        """``forward`` or ``local``: where this bridge's embeddings came from (what ``auto`` became)."""
        return "local" if self.mode == "local" else "forward"

    def counts(self) -> dict[str, Any]:
        with self.lock:
            return {"chat_requests": self.chat_requests, "embedding_requests": self.embedding_requests,
                    "embedding_tokens": self.embedding_tokens, "local_embedding_requests": self.local_embedding_requests,
                    "failures": self.failures, "embeddings": self.embeddings_used, "fallback": self.fallback}

    def __enter__(self) -> "OpenAIBridge":
        bridge = self

        class Handler(_Handler):
            pass

        Handler.bridge = bridge
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="openai-bridge", daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # -- answers ---------------------------------------------------------------------------------------------
    def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body.get("tools"):
            return 400, _error("the workbench bridge answers plain chat requests, not tool calls")
        messages = [{"role": str(m.get("role", "user")), "content": _text(m.get("content"))}
                    for m in body.get("messages") or []]
        stop = body.get("stop") or ()
        params = GenerationParams(temperature=float(body.get("temperature") or 0.0),
                                  max_tokens=int(body.get("max_tokens") or body.get("max_completion_tokens")
                                                 or DEFAULT_MAX_TOKENS),
                                  n=int(body.get("n") or 1), stop=(stop,) if isinstance(stop, str) else tuple(stop),
                                  seed=int(body.get("seed") or 0), json_schema=as_param(_schema(body)))
        with self.lock:
            self.chat_requests += 1
        try:
            completion = self.llm.complete(messages, params)
        except (LLMError, SendingStopped) as exc:
            # 400 for every failure: the LLM path has retried already, and the peer would retry a 5xx again
            with self.lock:
                self.failures += 1
                # the run was stopped: the peer reads the 400 as a failed item, its caller must stop instead
                self.stopped = self.stopped or isinstance(exc, SendingStopped)
                if self.fatal is None and isinstance(exc, BackendUnavailable):
                    self.fatal = exc
            reason = exc.reason if isinstance(exc, RequestRejected) else str(exc)
            return 400, _error(reason)
        return 200, {"id": f"bridge-{self.chat_requests}", "object": "chat.completion", "created": int(time.time()),
                     "model": completion.model or BRIDGE_MODEL,
                     "choices": [{"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": t}}
                                 for i, t in enumerate(completion.texts)],
                     "usage": {"prompt_tokens": completion.prompt_tokens,
                               "completion_tokens": completion.completion_tokens,
                               "total_tokens": completion.prompt_tokens + completion.completion_tokens}}

    def embed(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else [str(t) for t in texts or []]
        dimensions = int(body.get("dimensions") or 512)
        if self.mode != "local":
            status, reply = self._forward(body)
            if status == 200 or self.mode == "forward":
                return status, reply
            with self.lock:  # auto: the server has no embeddings; answer every later request here
                self.mode, self.fallback = "local", f"the server's /embeddings answered {status}: {_reason(reply)}"
        with self.lock:
            self.local_embedding_requests += 1
        data = [{"object": "embedding", "index": i, "embedding": v}
                for i, v in enumerate(local_embeddings(texts, dimensions))]
        return 200, {"object": "list", "data": data, "model": "local-hashing",
                     "usage": {"prompt_tokens": 0, "total_tokens": 0}}

    def _cache_key(self, body: dict[str, Any], text: str) -> str:
        """The call cache's key of one text's embedding: the server, the model, the dimensions and the text. Per
        text, not per request: the peer groups the queries of items scored at once into one request, differently
        from run to run."""
        asked = json.dumps({"input": text, "model": body.get("model"), "dimensions": body.get("dimensions")},
                           sort_keys=True, ensure_ascii=False)
        return cache_key(EMBEDDINGS_BACKEND, self.embeddings_url, [{"role": "user", "content": asked}],
                         GenerationParams())

    def _forward(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else [str(t) for t in texts or []]
        cache = self.llm.cache
        keys = [self._cache_key(body, t) for t in texts]
        found = cache.get_many(keys) if cache is not None else {}
        vectors: dict[int, Any] = {i: json.loads(found[k]["texts"][0]) for i, k in enumerate(keys) if k in found}
        ask = [i for i in range(len(texts)) if i not in vectors]
        tokens = 0
        if ask:
            status, reply, seconds = self._post({**body, "input": [texts[i] for i in ask]})
            if status != 200:
                return status, reply
            data = sorted(reply["data"], key=lambda d: int(d.get("index", 0)))
            if len(data) != len(ask):
                return 502, _error(f"{self.embeddings_url} answered {len(data)} embeddings for {len(ask)} texts")
            usage = reply.get("usage") or {}
            tokens = int(usage.get("prompt_tokens") or usage.get("total_tokens") or 0)
            with self.lock:
                self.embedding_requests += 1
                self.embedding_tokens += tokens
            # a call to the backend like any other: the run's ledger counts it and its tokens (at the prompt price)
            self.llm.ledger.record(Completion(texts=(), prompt_tokens=tokens, latency_s=seconds,
                                              model=str(body.get("model") or "")))
            rows = []
            for i, d in zip(ask, data):
                vectors[i] = d["embedding"]
                rows.append((keys[i], {"messages": [{"role": "user", "content": texts[i][:200]}],
                                       "url": self.embeddings_url, "model": body.get("model")},
                             Completion(texts=(json.dumps(d["embedding"]),)).to_dict()))
            if cache is not None:  # the one call cache keeps each text's embedding
                cache.put_many(rows, backend=EMBEDDINGS_BACKEND, model=self.embeddings_url)
        else:  # every text asked before: answered from the cache, counted as a hit
            self.llm.ledger.record(Completion(texts=(), cached=True))
        return 200, {"object": "list", "model": body.get("model"),
                     "data": [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in range(len(texts))],
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def _post(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], float]:
        """POST ``body`` to the embeddings endpoint: (status, reply, seconds), retried like the LLM path's calls."""
        request = urllib.request.Request(self.embeddings_url, data=json.dumps(body).encode("utf-8"), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  **({"Authorization": f"Bearer {self.api_key}"}
                                                     if self.api_key else {})})
        started = time.monotonic()
        status, failed = 502, _error("not sent")
        for attempt in range(self.llm.config.max_retries + 1):
            if attempt:  # a dropped connection or a 429/5xx is tried again after a pause
                time.sleep(min(8.0, 0.5 * 2 ** attempt))
            try:
                with urllib.request.urlopen(request, timeout=self.llm.config.timeout) as answer:
                    reply = json.loads(answer.read())
            except urllib.error.HTTPError as exc:
                status, failed = exc.code, _error(exc.read().decode("utf-8", "replace")[:300] or str(exc))
                if status != 429 and status < 500:
                    break
                continue
            except (OSError, ValueError) as exc:
                status, failed = 502, _error(f"{self.embeddings_url} did not answer: {exc}")
                continue
            if not isinstance(reply, dict) or not isinstance(reply.get("data"), list):
                return 502, _error(f"{self.embeddings_url} answered something that is not an embeddings list"), 0.0
            return 200, reply, time.monotonic() - started
        return status, failed, 0.0


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def _reason(reply: dict[str, Any]) -> str:
    return str((reply.get("error") or {}).get("message", ""))[:200]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    bridge: OpenAIBridge

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            return self._send(200, {"object": "list", "data": [{"id": BRIDGE_MODEL, "object": "model"}]})
        self._send(404, _error("no route"))

    def do_POST(self) -> None:
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        except ValueError:
            return self._send(400, _error("the request is not JSON"))
        path = self.path.rstrip("/")
        if path.endswith("/chat/completions"):
            return self._send(*self.bridge.chat(body))
        if path.endswith("/embeddings"):
            return self._send(*self.bridge.embed(body))
        self._send(404, _error(f"no route {self.path}"))


_ENV_LOCK = threading.Lock()
"""One peer at a time in a process: the peer reads its endpoint from the process's environment."""


@contextmanager
def peer_environment(bridge: OpenAIBridge) -> Iterator[None]:
    """Point MLflow's OpenAI provider and litellm at ``bridge`` for the block (the environment restored after).

    ``OPENAI_API_BASE`` is what MLflow's gateway client reads first; the ``openai`` package reads only
    ``OPENAI_BASE_URL``, which is left alone, so the workbench's own OpenAI client keeps its server. litellm
    (DSPy's client) gets the bridge as its ``api_base`` and reads its model-cost map from its own package, and
    MLflow fetches no model catalog: neither would know the bridge's model, and the network may be closed.
    """
    # MLflow would fetch its model catalog (the bridge's model is in none); the bridge needs no key, MLflow wants one
    settings = {"OPENAI_API_BASE": bridge.base_url, "MLFLOW_MODEL_CATALOG_URI": "", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with _ENV_LOCK, environment(settings, defaults={"OPENAI_API_KEY": "judge-workbench-bridge"}):
        import litellm

        saved_base = litellm.api_base
        litellm.api_base = bridge.base_url
        try:
            yield
        finally:
            litellm.api_base = saved_base

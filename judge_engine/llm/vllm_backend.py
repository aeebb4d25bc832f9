"""Offline vLLM engine for GPU hosts (``pip install -r requirements-gpu.txt``).

Imported lazily: without vLLM installed, choosing this backend explains how to
install it instead of failing at import time.

vLLM's throughput comes from decoding many sequences at once, so
:meth:`VLLMBackend.generate_many` sends a whole batch of requests as ONE
``LLM.chat`` call (a list of conversations with one ``SamplingParams`` each);
:meth:`judge_engine.llm.LLM.complete_many` uses it for the requests the cache
cannot answer. The engine is not thread-safe, so calls still hold a process
lock, but a lock around a batch no longer means one sequence at a time.

Structured replies: a request with a JSON schema gets vLLM's guided decoding.
The parameter moved between vLLM versions and is found by feature detection:
``SamplingParams(structured_outputs=StructuredOutputsParams(json=schema))``
(newer vLLM) or ``SamplingParams(guided_decoding=GuidedDecodingParams(json=schema))``
(older); a vLLM with neither answers schema requests as free text. The
setting ``off`` never sends a schema; every other mode means the native one.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

from .base import (FREE_TEXT, BackendUnavailable, Completion, GenerationParams, LLMError, Message,
                   request_schema)

_ENGINES: dict[str, Any] = {}
_LOCK = threading.Lock()

INSTALL_HINT = ("vLLM is not installed. On a machine with a CUDA GPU run: "
                "pip install -r requirements-gpu.txt — or serve the model with `vllm serve MODEL` "
                "and use the openai backend with its base URL.")

MAX_BATCH = 256
"""Requests per ``LLM.chat`` call: vLLM schedules them itself; between batches the client caches results."""


def structured_parameter(vllm: Any) -> tuple[str, Callable[[dict[str, Any]], dict[str, Any]] | None]:
    """The installed vLLM's guided-decoding parameter: ``(mode name, schema -> SamplingParams kwargs)``.

    ``("", None)`` when this vLLM has none.
    """
    module = getattr(vllm, "sampling_params", None)
    if module is None:
        try:
            import importlib
            module = importlib.import_module(f"{vllm.__name__}.sampling_params")
        except ImportError:
            return "", None
    if hasattr(module, "StructuredOutputsParams"):
        cls = module.StructuredOutputsParams
        return "structured_outputs", lambda schema: {"structured_outputs": cls(json=schema)}
    if hasattr(module, "GuidedDecodingParams"):
        cls = module.GuidedDecodingParams
        return "guided_decoding", lambda schema: {"guided_decoding": cls(json=schema)}
    return "", None


class VLLMBackend:
    """``vllm.LLM.chat`` in-process; one engine per model per process; batches in one call."""

    name = "vllm"
    supports_logprobs = True
    max_batch = MAX_BATCH

    def __init__(self, model: str, *, structured: str = "auto"):
        if not model:
            raise LLMError("the vllm backend needs a model name or path (e.g. Qwen/Qwen2.5-7B-Instruct)")
        try:
            import vllm
        except ImportError as exc:
            raise BackendUnavailable(INSTALL_HINT) from exc
        self._vllm = vllm
        self.model_id = model
        self.structured = structured
        native, self._constrain = structured_parameter(vllm)
        self.effective_structured_mode = "off" if structured == "off" else (native or FREE_TEXT)
        with _LOCK:
            if model not in _ENGINES:
                _ENGINES[model] = vllm.LLM(model=model)
            self._engine = _ENGINES[model]

    def _sampling_params(self, params: GenerationParams) -> tuple[Any, str]:
        kwargs: dict[str, Any] = dict(temperature=params.temperature, max_tokens=params.max_tokens, n=params.n,
                                      stop=list(params.stop) or None,
                                      seed=params.seed + params.sample_index * params.n,
                                      logprobs=params.top_logprobs or None,
                                      presence_penalty=params.presence_penalty)
        mode = ""
        if params.json_schema:
            mode = self.effective_structured_mode
            if self._constrain is not None and mode not in ("off", FREE_TEXT):
                kwargs.update(self._constrain(request_schema(params.json_schema)))
        return self._vllm.SamplingParams(**kwargs), mode

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion:
        return self.generate_many([(messages, params)])[0]

    def generate_many(self, pairs: Sequence[tuple[list[Message], GenerationParams]]) -> list[Completion]:
        """Answer every ``(messages, params)`` in one ``LLM.chat`` call, in order.

        Each completion's ``latency_s`` is its share of the batch's seconds,
        so the ledger's summed seconds stay the time actually spent.
        """
        if not pairs:
            return []
        sampling = [self._sampling_params(params) for _, params in pairs]
        start = time.perf_counter()
        with _LOCK:
            outs = self._engine.chat([list(messages) for messages, _ in pairs], [sp for sp, _ in sampling],
                                     use_tqdm=False)
        share = (time.perf_counter() - start) / len(pairs)
        if len(outs) != len(pairs):
            raise LLMError(f"vLLM returned {len(outs)} outputs for {len(pairs)} conversations")
        tok = self._engine.get_tokenizer()
        return [self._completion(out, params, mode, share, tok)
                for out, (_, params), (_, mode) in zip(outs, pairs, sampling)]

    def _completion(self, out: Any, params: GenerationParams, mode: str, seconds: float, tok: Any) -> Completion:
        texts, logprobs = [], []
        for o in out.outputs:
            texts.append(o.text)
            positions = []
            for token_id, alts in zip(o.token_ids[:16], (o.logprobs or [])[:16]):
                top = {a.decoded_token or tok.decode([tid]): float(a.logprob) for tid, a in alts.items()}
                chosen = alts.get(token_id)
                positions.append({"token": tok.decode([token_id]),
                                  "logprob": float(chosen.logprob) if chosen else float("nan"), "top": top})
            logprobs.append(tuple(positions))
        return Completion(texts=tuple(texts), logprobs=tuple(logprobs) if params.top_logprobs else (),
                          prompt_tokens=len(out.prompt_token_ids or []),
                          completion_tokens=sum(len(o.token_ids) for o in out.outputs),
                          latency_s=seconds, model=self.model_id, structured_mode=mode)

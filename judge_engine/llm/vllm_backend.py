"""Offline vLLM engine for GPU hosts (``pip install -r requirements-gpu.txt``).

Imported lazily: without vLLM installed, choosing this backend explains how to
install it instead of failing at import time.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .base import BackendUnavailable, Completion, GenerationParams, LLMError, Message

_ENGINES: dict[str, Any] = {}
_LOCK = threading.Lock()

INSTALL_HINT = ("vLLM is not installed. On a machine with a CUDA GPU run: "
                "pip install -r requirements-gpu.txt — or serve the model with `vllm serve MODEL` "
                "and use the openai backend with its base URL.")


class VLLMBackend:
    """``vllm.LLM.chat`` in-process; one engine per model per process."""

    name = "vllm"
    supports_logprobs = True

    def __init__(self, model: str):
        if not model:
            raise LLMError("the vllm backend needs a model name or path (e.g. Qwen/Qwen2.5-7B-Instruct)")
        try:
            import vllm
        except ImportError as exc:
            raise BackendUnavailable(INSTALL_HINT) from exc
        self._vllm = vllm
        self.model_id = model
        with _LOCK:
            if model not in _ENGINES:
                _ENGINES[model] = vllm.LLM(model=model)
            self._engine = _ENGINES[model]

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion:
        sp = self._vllm.SamplingParams(temperature=params.temperature, max_tokens=params.max_tokens,
                                       n=params.n, stop=list(params.stop) or None,
                                       seed=params.seed + params.sample_index * params.n,
                                       logprobs=params.top_logprobs or None)
        start = time.perf_counter()
        with _LOCK:
            out = self._engine.chat([messages], sp, use_tqdm=False)[0]
        tok = self._engine.get_tokenizer()
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
                          latency_s=time.perf_counter() - start, model=self.model_id)

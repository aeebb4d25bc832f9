"""The child side of the embedded model's check (:mod:`judge_engine.llm.model_check`): load a GGUF model with
llama.cpp and generate a few tokens.

Run as a script by its path (``python -P model_probe.py FILE``), so that the child imports llama_cpp and no
part of this package: importing ``judge_engine`` (pandas, sklearn, ...) took 9 of the check's 31 seconds on a
busy 2-core machine. Only the standard library is imported here.
"""

from __future__ import annotations

import json
import os
import sys

CHECK_PROMPT = "The capital of France is"
CHECK_TOKENS = 3
"""Tokens the child generates: the prompt is evaluated as a batch and each new token alone, the two kinds of
kernel a scoring call runs."""
CHECK_CTX = 128


def main(path: str) -> int:
    """Load ``path`` and generate :data:`CHECK_TOKENS` tokens; 0 when that worked, 1 with the error on stderr.

    llama.cpp's log is on (``verbose``): when a load fails, its last lines say why (a bad magic, tensor data
    past the end of the file, an unknown architecture)."""
    try:
        from llama_cpp import Llama

        llama = Llama(model_path=path, n_ctx=CHECK_CTX, n_threads=min(os.cpu_count() or 1, 8), verbose=True, seed=0)
        out = llama.create_completion(CHECK_PROMPT, max_tokens=CHECK_TOKENS, temperature=0.0)
        llama.close()  # before interpreter teardown, where llama.cpp's finalizers fail
    except Exception as exc:  # noqa: BLE001 - whatever failed, the parent quotes it
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"completion_tokens": (out.get("usage") or {}).get("completion_tokens")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

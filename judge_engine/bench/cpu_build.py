"""CPU build: tokens a second of the embedded model, the installed llama-cpp-python build vs another build.

The project builds llama-cpp-python for a portable x86-64 baseline (AVX2, no AVX-512, no AMX; the
Makefile's ``LLAMA_CMAKE_ARGS``) instead of llama.cpp's default ``-march=native``, because a native build
can crash on machines other than the one it was built on (docs/models.md). This measures what that costs:
``--other PATH`` names a folder holding another build's ``llama_cpp`` package (for example one made with
``CMAKE_ARGS=-DGGML_NATIVE=ON pip install --target PATH --no-deps llama-cpp-python==...``). Each arm is a
fresh child process that loads SmolLM2 and reads one fixed prompt, then generates a fixed number of tokens
greedily; llama.cpp's own performance counters give the prompt and generation tokens a second. The arms
alternate (A B, B A, ...) and the figures are medians over repeats.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from . import med, result

# run in a child process: load the model, read a prompt, generate; print llama.cpp's counters as JSON
_CHILD = r"""
import json, os, sys
import llama_cpp
from judge_engine.llm.llamacpp import embedded_model_path

prompt_tokens, gen_tokens = int(sys.argv[1]), int(sys.argv[2])
llm = llama_cpp.Llama(model_path=str(embedded_model_path()), n_ctx=prompt_tokens + gen_tokens + 64,
                      n_threads=os.cpu_count() or 1, verbose=False)
words = ("The judge reads each summary and the article it summarises, then rates how well the "
         "sentences fit together into one coherent body of information about the topic. ").split()
text = " ".join(words[i % len(words)] for i in range(prompt_tokens * 2))
tokens = llm.tokenize(text.encode())[:prompt_tokens]
llm.reset()
llama_cpp.llama_perf_context_reset(llm._ctx.ctx)
llm.create_completion(tokens, max_tokens=gen_tokens, temperature=0.0, seed=0)
perf = llama_cpp.llama_perf_context(llm._ctx.ctx)
print(json.dumps({"library": llama_cpp.__file__, "system_info": llama_cpp.llama_print_system_info().decode(),
                  "prompt_tokens": perf.n_p_eval, "prompt_ms": perf.t_p_eval_ms,
                  "gen_tokens": perf.n_eval, "gen_ms": perf.t_eval_ms}))
"""


def add_arguments(parser) -> None:
    parser.add_argument("--other", required=True,
                        help="folder with another build's llama_cpp package (put first on PYTHONPATH)")
    parser.add_argument("--other-name", default="native", help="what to call that build in the table")
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)


def _arm(pythonpath: str | None, prompt_tokens: int, gen_tokens: int) -> dict[str, Any]:
    env = dict(os.environ)
    repo = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, repo) if p)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(prompt_tokens), str(gen_tokens)], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the build at {pythonpath or 'the venv'} failed (exit {done.returncode}): "
                           f"{done.stderr.strip()[-400:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(*, other: str, other_name: str = "native", prompt_tokens: int = 512, gen_tokens: int = 64,
        repeats: int = 5, **_: Any) -> dict[str, Any]:
    if not (Path(other) / "llama_cpp").is_dir():
        raise ValueError(f"--other {other}: no llama_cpp package in that folder")
    if repeats < 1 or prompt_tokens < 8 or gen_tokens < 1:
        raise ValueError("--repeats must be at least 1, --prompt-tokens at least 8, --gen-tokens at least 1")
    arms = {"portable (installed)": None, other_name: str(Path(other).resolve())}
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in arms}
    names = list(arms)
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            samples[name].append(_arm(arms[name], prompt_tokens, gen_tokens))
    rows = []
    for name, runs in samples.items():
        prompt = [s["prompt_tokens"] / s["prompt_ms"] * 1000 for s in runs if s["prompt_ms"] > 0]
        gen = [s["gen_tokens"] / s["gen_ms"] * 1000 for s in runs if s["gen_ms"] > 0]
        rows.append({"build": name, "prompt_tokens_per_s": round(med(prompt), 1),
                     "gen_tokens_per_s": round(med(gen), 1), "prompt_tokens": runs[0]["prompt_tokens"],
                     "gen_tokens": runs[0]["gen_tokens"], "library": runs[0]["library"],
                     "system_info": runs[0]["system_info"]})
    base, alt = rows
    summary = {"prompt_ratio": round(base["prompt_tokens_per_s"] / alt["prompt_tokens_per_s"], 3),
               "gen_ratio": round(base["gen_tokens_per_s"] / alt["gen_tokens_per_s"], 3)}
    config = {"other": str(Path(other).resolve()), "prompt_tokens": prompt_tokens, "gen_tokens": gen_tokens,
              "repeats": repeats}
    return result("cpu-build", config=config, rows=rows, summary=summary,
                  notes=["ratios are the installed build's tokens a second over the other's (medians)"])

"""Busy machine: the embedded model's requests beside other CPU-bound work, threads following the load vs every core.

Each level starts ``k`` processes that spin on a core (``--busy 0 1 2``), waits for them to run, then sends the
same judge-like request (a SummEval-sized article and summary, a reasoned score of up to ``--max-tokens``
tokens, temperature 0) through :class:`judge_engine.llm.llamacpp.LlamaCppBackend` with its thread count
chosen per request (:mod:`judge_engine.llm.threads`) and with it fixed at every usable core (what the
backend did before), arms interleaved. Reported per level: median seconds a request of each arm, their
ratio, and whether both arms gave the same reply (they must: the thread count changes no logit).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from ..environment import environment
from . import interleaved, med, median_ratio, result

ARTICLE = ("The city council voted on Tuesday to extend the late-night bus service for another year, after a "
           "trial showed that ridership between midnight and four in the morning had doubled. Supporters said "
           "shift workers and students relied on it; opponents questioned the cost, which the transport office "
           "put at two million a year. The mayor said the money would come from parking fees. ")
SUMMARY = "The council kept the night buses for a year, paid for by parking fees, because twice as many people rode them."


def add_arguments(parser) -> None:
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2],
                        help="CPU-bound processes beside the model, one level each")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=80)
    parser.add_argument("--article-repeats", type=int, default=4, help="copies of the article (prompt length)")


def _spinners(k: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]


def run(*, busy: list[int], repeats: int = 3, max_tokens: int = 80, article_repeats: int = 4,
        **_: Any) -> dict[str, Any]:
    if repeats < 1 or max_tokens < 1 or article_repeats < 1 or any(k < 0 for k in busy):
        raise ValueError("--repeats, --max-tokens and --article-repeats must be at least 1, --busy at least 0")
    from ..llm import threads
    from ..llm.base import GenerationParams
    from ..llm.llamacpp import LlamaCppBackend

    backend = LlamaCppBackend()
    messages = [{"role": "system", "content": "You grade summaries of news articles for coherence."},
                {"role": "user", "content": f"Article:\n{ARTICLE * article_repeats}\n\nSummary:\n{SUMMARY}\n\n"
                 "Explain in two sentences how well the summary's sentences fit together, then give a score "
                 "from 1 to 5 as 'Score: N'."}]
    params = GenerationParams(temperature=0.0, max_tokens=max_tokens)
    cores = str(threads.usable_cores())
    replies: dict[str, set[str]] = {"follow the load": set(), "every core": set()}
    chosen: list[int] = []

    def arm(name: str):
        def call(_: int) -> None:
            if name == "every core":
                os.environ[threads.THREADS_ENV] = cores
            else:
                os.environ.pop(threads.THREADS_ENV, None)
                threads._LAST.clear()  # a fresh count: the level's spinners, not the last level's
            backend._llama.reset()  # each request reads its whole prompt, as the first of a run does
            replies[name].add(backend.generate(messages, params).texts[0])
            if name == "follow the load":
                chosen.append(backend._llama.request_threads[0])
        return call

    rows = []
    with environment(restored=(threads.THREADS_ENV,)):  # the arms set and remove it
        backend.generate(messages, params)  # load and warm the model outside the timings
        for k in busy:
            procs = _spinners(k)
            try:
                time.sleep(1.0)
                chosen.clear()
                seconds = interleaved({"follow the load": arm("follow the load"), "every core": arm("every core")},
                                      repeats)
                load = os.getloadavg()[0]
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
            rows.append({"busy": k, "threads_chosen": sorted(set(chosen)),
                         "follow_s": round(med(seconds["follow the load"]), 2),
                         "every_core_s": round(med(seconds["every core"]), 2),
                         "every_core_over_follow": round(median_ratio(seconds["every core"],
                                                                      seconds["follow the load"]), 2),
                         "load_1min": round(load, 2)})
    same = all(len(r) == 1 for r in replies.values()) and replies["follow the load"] == replies["every core"]
    return result("busy-machine", config={"busy": busy, "repeats": repeats, "max_tokens": max_tokens,
                                          "article_repeats": article_repeats, "usable_cores": int(cores)},
                  rows=rows, summary={"same_reply_every_arm": same},
                  notes=["every_core_over_follow > 1: following the load is faster (medians of interleaved "
                         "requests)"])

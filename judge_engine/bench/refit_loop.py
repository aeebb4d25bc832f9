"""The annotator's fast loop (issue 62 item 6): a re-score or next round that needs no new LLM call.

A database holds a finished HD-Eval run (paper-default tree) and a finished HypoEval run (its 5 selected
hypotheses) on a simulated world (:mod:`.simulated_judge`). Their replies were made in this process by a
simulated judge that stands in for an OpenAI-compatible server (:class:`CachedAsServer`: the same backend name,
model id and structured mode as the worker's real client), so every request of a next round with the tree
unchanged, or of a re-score with the same hypotheses, is answered by the persistent cache. The server at the
runs' ``base_url`` (:mod:`.stub_server`) counts any request that does reach it: the loop's "new LLM calls".

:func:`next_round_spec` and :func:`rescore_spec` are what the pages' buttons start (the HD-Eval page's "Run next
round with this tree", HypoEval's "Re-score with the accepted hypotheses"); :func:`time_engine` times
:func:`judge_engine.runs.launch` until the run is finished, and :func:`time_click` (``bench app --loop N``)
clicks the page's own button in its script (Streamlit's ``AppTest``, no browser) until the page has drawn the
finished run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..llm import LLMConfig, make_llm
from ..records import Dataset
from ..runs import RunSpec, create_run, execute_run, poll_interval
from ..store import Store
from .simulated_judge import ASPECTS, TARGET, TASK, SimulatedBackend, World

DATASET = "simulated"
N_TRAIN, N_TEST = 30, 20
"""HypoEval's paper |S_tr| is 30; the same split serves both methods."""


class CachedAsServer(SimulatedBackend):
    """The simulated judge under the name, model id and structured mode of the OpenAI-compatible client the
    worker builds for ``config``: its replies land in the cache under the keys the worker looks up."""

    def __init__(self, world: World, config: LLMConfig):
        super().__init__(world)
        self.name = "openai"
        self.model_id = f"{config.base_url or 'openai'}|{config.model}"
        self.effective_structured_mode = config.structured


def server_config(base_url: str) -> LLMConfig:
    """The backend the runs record: an OpenAI-compatible server at ``base_url`` with JSON-schema replies."""
    return LLMConfig(backend="openai", base_url=base_url, model="stub-model", structured="json_schema",
                     concurrency=8)


@dataclass(frozen=True)
class Seeded:
    """The finished runs a loop starts from."""

    hd_eval: int
    hypoeval: int


def seed_runs(db: str | Path, base_url: str, *, seed: int = 0) -> Seeded:
    """A world's dataset and a finished HD-Eval (paper defaults) and HypoEval run on it, made in this process."""
    world = World(seed, n_samples=2 * (N_TRAIN + N_TEST), malformed=0.0)
    aspect = next(a for a in ASPECTS if a.name == TARGET)
    store = Store(db)
    store.save_dataset(Dataset(name=DATASET, task=TASK.task, aspects=tuple(ASPECTS), samples=tuple(world.samples),
                               natural_level="group", input_label=TASK.input_label, output_label=TASK.output_label))
    config = server_config(base_url)
    ids = []
    for method in ("hd_eval", "hypoeval"):
        run_id = create_run(store, RunSpec(method=method, dataset=DATASET, aspect=aspect.name, params={},
                                           train_size=N_TRAIN, test_size=N_TEST, seed=seed, llm=config))
        execute_run(store, run_id, llm=make_llm(config, store=store, backend=CachedAsServer(world, config)))
        ids.append(run_id)
    store.close()
    return Seeded(*ids)


def next_round_spec(store: Store, run_id: int) -> RunSpec:
    """What the HD-Eval page's "Run next round with this tree" starts for an unchanged tree."""
    from ..methods import Judge
    from ..methods.hd_eval import load_tree, next_round_tree, seed_tree
    from ..methods.hd_eval import HDEvalState
    run = store.run(run_id)
    seed_tree(store, run_id, HDEvalState.from_judge(Judge.from_dict(run.judge)).tree)
    tree = load_tree(store, run_id).tree
    return RunSpec(method="hd_eval", dataset=run.dataset, aspect=run.aspect,
                   params={**run.params, "criteria_tree": next_round_tree(tree)},
                   train_size=len(run.split.train_ids), test_size=len(run.split.test_ids), seed=run.split.seed,
                   llm=LLMConfig.from_dict(run.llm))


def rescore_spec(store: Store, run_id: int) -> RunSpec:
    """What HypoEval's "Re-score with the accepted hypotheses" starts when the selected ones are accepted."""
    from ..methods import Judge
    from ..methods.hypoeval import HypoEvalState
    run = store.run(run_id)
    state = HypoEvalState.from_judge(Judge.from_dict(run.judge))
    params = {**run.params, "hypotheses": [{"text": h.text, "origin": h.origin} for h in state.selected],
              "n_selected": len(state.selected)}
    return RunSpec(method="hypoeval", dataset=run.dataset, aspect=run.aspect, params=params, seed=run.split.seed,
                   llm=LLMConfig.from_dict(run.llm))


def wait_finished(store: Store, run_id: int, timeout: float = 300.0, poll: float = 0.05) -> str:
    """The run's status once it is no longer queued or running (or ``timeout`` when it still is)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = store.run(run_id).status
        if status not in ("queued", "running"):
            return status
        time.sleep(poll)
    return "timeout"


def time_engine(store: Store, spec: RunSpec, source: int) -> dict[str, Any]:
    """Seconds from :func:`judge_engine.runs.launch` (what the page's button calls) until the run is finished."""
    from ..runs import launch
    run = store.run(source)
    start = time.perf_counter()
    started = launch(store, spec, split=run.split)
    launched = time.perf_counter() - start
    status = wait_finished(store, started[0].run_id)
    done = time.perf_counter() - start
    finished = store.run(started[0].run_id)
    return {"run_id": started[0].run_id, "status": status, "launch_s": launched, "finished_s": done,
            "llm_calls": finished.ledger.calls, "cache_hits": finished.ledger.cache_hits}


def _ticks(pid: int) -> float:
    """CPU seconds process ``pid`` has used (user + system, its waited-for children included); 0 once gone."""
    import os
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _children() -> set[int]:
    """This process's child processes (the warm workers the page started)."""
    import os
    out: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").glob("*"):
        try:
            out |= {int(x) for x in (task / "children").read_text().split()}
        except OSError:
            pass
    return out


def _process_cpu() -> tuple[float, float]:
    """CPU seconds of this process (the page's script runs) and of its ended, waited-for children."""
    import resource
    own, ended = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, ended.ru_utime + ended.ru_stime


BUTTONS = {"hd_eval": ("pages/hd_eval.py", "hd_next_{run}"), "hypoeval": ("pages/hypoeval.py", "hypoeval_rescore")}
"""Per method: the page and the key of the button a person clicks (``{run}``: the run shown)."""

def time_click(app: Path, db: Path, method: str, source: int, *, timeout: float = 300.0) -> dict[str, Any]:
    """The page of ``method`` showing run ``source``, its loop button clicked; seconds until the page shows the
    started run finished, as a browser would see it, with the parts apart.

    The page's script runs in this process (Streamlit's ``AppTest``, no browser). The page keeps a warm worker
    (:func:`judge_engine.runs.keep_standby`); the click comes once it is ready, as after a person has read the page
    (``warm_ready_s``: how long after the page was drawn; ``warm_worker`` False: none, a fresh one starts). ``click_s`` is the script run
    of the click (the run is created and its worker started, the page then names it); the run is then
    watched in the store until finished; the progress panel, drawn when the click's run ended, reads the run
    every :func:`judge_engine.runs.poll_interval` seconds (``poll_s``), so the first of its reads after the finish
    starts the page's run that shows the results (``results_s``). ``shown_s`` = the click until that run is over.

    CPU seconds, which a loaded machine does not inflate as it does the wall times: ``page_cpu_s`` this process's
    (the click's and the results' script runs), ``worker_cpu_s`` the warm worker that took the run (its hand-over and
    the run's execution, read once it has ended), ``next_standby_cpu_s`` the warm worker started for the next run
    meanwhile (its imports, on the same two cores).
    """
    from streamlit.testing.v1 import AppTest  # the bench times the app's own script runs (no browser here)
    page, key = BUTTONS[method]
    from ..runs.workers import standby_ready
    at = AppTest.from_file(str(app), default_timeout=timeout).run()
    at.switch_page(page).run()
    # the page keeps a warm worker for its button (runs.keep_standby); a person reads the page before clicking
    shown = time.perf_counter()
    ready = standby_ready(db, timeout)
    warm_s = time.perf_counter() - shown
    store = Store(db)
    before = max(r.id for r in store.runs(limit=1))
    button = next(b for b in at.button if b.key == key.format(run=source))
    standbys = {pid: _ticks(pid) for pid in _children()}
    page_cpu, ended_cpu = _process_cpu()
    start = time.perf_counter()
    button.click().run(timeout=timeout)
    clicked = time.perf_counter() - start
    click_cpu = _process_cpu()[0] - page_cpu
    drawn = time.time()
    new_id = max(r.id for r in store.runs(limit=1))
    status = wait_finished(store, new_id, timeout) if new_id > before else "not started"
    finished = time.perf_counter() - start
    # the panel's reads: every poll_s after the click's script run ended; the first one after the finish
    poll_s = poll_interval(store.run(new_id), drawn) if new_id > before else 0.0
    read = clicked + (poll_s * max(1, -(-(finished - clicked) // poll_s)) if poll_s else 0.0)
    shown_start, results_cpu = time.perf_counter(), _process_cpu()[0]
    at.run(timeout=timeout)
    results = time.perf_counter() - shown_start
    results_cpu = _process_cpu()[0] - results_cpu
    # the warm worker that took the run ends once it has recorded the run's end; its reaper then adds its CPU (and
    # its forked worker's) to this process's ended children
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in standbys) and time.monotonic() < deadline:
        time.sleep(0.05)
    worker_cpu = _process_cpu()[1] - ended_cpu - sum(standbys.values())
    next_standby = sum(_ticks(pid) for pid in _children() - set(standbys))
    run = store.run(new_id)
    return {"run_id": new_id, "status": status, "warm_worker": ready, "warm_ready_s": warm_s, "click_s": clicked, "finished_s": finished, "poll_s": poll_s,
            "panel_read_s": read, "results_s": results, "shown_s": read + results,
            "page_cpu_s": click_cpu + results_cpu, "worker_cpu_s": worker_cpu, "next_standby_cpu_s": next_standby,
            "llm_calls": run.ledger.calls, "cache_hits": run.ledger.cache_hits,
            "exception": [e.value for e in at.exception]}

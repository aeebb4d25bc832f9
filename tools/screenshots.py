"""Produce the README's screenshots from real runs of the embedded model, in the real app, in headless Chromium.

    python tools/screenshots.py [--db data/screenshots.db] [--out docs/img] [--dataset summeval] [--aspect coherence]

The pictures are made, not drawn by hand, so they show what the app does today:

1. Runs, through the engine's one run path (:func:`judge_engine.runs.create_run`, then
   :func:`~judge_engine.runs.execute_run`, in this process) on the embedded SmolLM2-135M-Instruct: the HD-Eval
   page's "Quick first look" (:func:`judge_engine.runs.quick_spec` with the page's defaults for the backend),
   then direct scoring and G-Eval on exactly its split. A finished run already in ``--db`` is reused, so a
   second call only takes the pictures again; every LLM call goes through the store's cache anyway.
2. The app (``streamlit run app.py``) on that database, driven by Playwright in Debian's Chromium with the
   helpers of the app benchmark (:mod:`judge_engine.bench.app_latency`).
3. ``hd-eval-tree.png`` (the HD-Eval page with the run's criteria tree), ``compare.png`` (the Compare page with
   the three runs, its plots drawn) and ``README.md``, their captions, in ``--out``.

What cannot be done (no browser, no benchmark file, a run that fails) is said in one line, not a traceback; a
HD-Eval run that ends without a judge (a 135M model may decompose nothing usable) is photographed as the page
shows it, and the captions say so.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    # `python tools/screenshots.py` puts tools/ first on the path; the engine beside it must win over any
    # installed copy of the package (an editable install may point at another checkout)
    sys.path.insert(0, str(ROOT))

from judge_engine import data  # noqa: E402
from judge_engine.llm import LLMConfig  # noqa: E402
from judge_engine.methods import get_method  # noqa: E402
from judge_engine.records import RunRecord, Split  # noqa: E402
from judge_engine.runs import (BASELINES, RunProgress, RunSpec, create_run, ended_without_judge,  # noqa: E402
                               execute_run, fast_defaults, quick_spec, same_backend)
from judge_engine.store import NotFound, Store  # noqa: E402

VIEWPORT = {"width": 1400, "height": 1000}
COMPARE_PLOTS = 4
"""Plots the Compare page draws (bars, cost, grid, histogram); its picture waits for all of them."""
PAGE_TIMEOUT_MS = 300_000
"""A page's first visit computes the server's caches (bootstrap intervals, probes): minutes on 2 cores."""


class Refused(RuntimeError):
    """Something this machine or these arguments cannot do; its message is the one line shown."""


def say(text: str) -> None:
    """One progress line, at once (the script runs for many minutes, usually under nohup into a log)."""
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def elapsed(seconds: float) -> str:
    """Seconds as ``12m05s``: how long runs take is what the log is read for."""
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run the embedded model on a built-in benchmark and take the "
                                                 "README's screenshots of the app.")
    parser.add_argument("--db", type=Path, default=ROOT / "data" / "screenshots.db",
                        help="database of the runs, kept between calls so finished runs are reused")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="folder of the pictures")
    parser.add_argument("--dataset", default="summeval", help="built-in benchmark (or a dataset stored in --db)")
    parser.add_argument("--aspect", default="coherence", help="the human aspect judged")
    return parser.parse_args(argv)


# --------------------------------------------------------------------------- what can run here

def browser_problem() -> str | None:
    """Why the pictures cannot be taken here (None when they can); checked before the long runs."""
    from judge_engine.bench.app_latency import available
    return available()


def dataset_problem(store: Store, dataset: str, aspect: str) -> str | None:
    """Why the runs cannot start on ``dataset``/``aspect`` (None when they can), before any model call."""
    if not store.has_dataset(dataset):
        if dataset not in data.BENCHMARKS:
            return (f"no dataset named {dataset!r} in {store.path} and no such built-in benchmark "
                    f"(built-ins: {', '.join(data.BENCHMARKS)})")
        path = data.benchmark_path(dataset)
        if not path.is_file():
            return (f"no benchmark found: {dataset} is expected at {path}; set {data.DATA_DIR_ENV} to the folder "
                    "holding the benchmark folders")
        known = [a.name for a in data.BENCHMARKS[dataset].aspects]
    else:
        known = [a["name"] for a in next(d["aspects"] for d in store.list_datasets() if d["name"] == dataset)]
    if aspect not in known:
        return f"{dataset} has no aspect {aspect!r} (it has {', '.join(known)})"
    return None


# --------------------------------------------------------------------------- the runs

def hd_eval_spec(dataset: str, aspect: str, llm: LLMConfig | None = None) -> RunSpec:
    """What the HD-Eval page's "Quick first look" starts on ``llm`` with its form untouched."""
    llm = llm or LLMConfig()
    page_form = RunSpec(method="hd_eval", dataset=dataset, aspect=aspect, params=fast_defaults("hd_eval", llm),
                        llm=llm)
    return quick_spec(page_form)


def baseline_spec(method: str, main: RunSpec) -> RunSpec:
    """A baseline (paper defaults) of ``main``, as the pages start it; its split is given at creation."""
    return RunSpec(method=method, dataset=main.dataset, aspect=main.aspect, train_size=main.train_size,
                   test_size=main.test_size, seed=main.seed, llm=main.llm)


def _json(value: Any) -> Any:
    """``value`` as the store gives it back (tuples become lists), so stored and wanted parameters compare."""
    return json.loads(json.dumps(value))


def settled(run: RunRecord) -> bool:
    """A run whose outcome is final: finished, or failed because its method found no judge (a resume would
    replay the same cached calls to the same end)."""
    return run.status == "finished" or bool(ended_without_judge(run))


def reusable_run(store: Store, spec: RunSpec, split: Split | None = None) -> RunRecord | None:
    """The newest settled run of ``spec`` in ``store``, or None: same method, dataset, aspect, parameters and
    model; on ``split``'s test items when given, else on a split of the spec's seed and training size."""
    params = _json(get_method(spec.method, spec.params).get_params())
    for run in store.runs(dataset=spec.dataset, limit=1000):
        if (run.method, run.aspect) != (spec.method, spec.aspect) or not settled(run) or run.split is None:
            continue
        if _json(run.params) != params or not same_backend(LLMConfig.from_dict(run.llm), spec.llm):
            continue
        if split is not None and run.split.test_ids != split.test_ids:
            continue
        if split is None and (run.split.seed, len(run.split.train_ids)) != (spec.seed, spec.train_size):
            continue
        return run
    return None


def progress_printer(label: str, started: float, every: float = 60.0) -> RunProgress:
    """A run's progress as log lines: at each new stage and at least every ``every`` seconds within one."""
    last = {"stage": None, "at": 0.0}

    def report(done: int, total: int, stage: str) -> None:
        now = time.time()
        if stage != last["stage"] or now - last["at"] >= every:
            last.update(stage=stage, at=now)
            say(f"{label}: {stage} ({done}/{total}), {elapsed(now - started)} elapsed")
    return report


def obtain_run(store: Store, spec: RunSpec, split: Split | None = None) -> RunRecord:
    """A settled run of ``spec``: reused from ``store`` when there is one, else created and executed here.

    A run that fails is returned as it ended (its message says why); the pictures show what the app shows.
    """
    found = reusable_run(store, spec, split)
    if found is not None:
        say(f"run #{found.id} {spec.method}: reused ({found.status}"
            + (f", {elapsed(found.summary.seconds)} when it ran" if found.summary else "") + ")")
        return store.run(found.id)
    run_id = create_run(store, spec, split=split, actor="screenshots")
    label = f"run #{run_id} {spec.method}"
    started = time.time()
    say(f"{label}: started on {spec.llm.label} (waits its turn when another process holds the embedded model)")
    try:
        execute_run(store, run_id, progress=progress_printer(label, started))
    except Exception as exc:  # the run records why; the pictures go on with what there is
        say(f"{label}: ended without finishing after {elapsed(time.time() - started)}: "
            f"{type(exc).__name__}: {exc}".splitlines()[0])
    else:
        say(f"{label}: finished in {elapsed(time.time() - started)}")
    return store.run(run_id)


@dataclass(frozen=True)
class Runs:
    """The runs the pictures show: the HD-Eval quick first look and its baselines on its split."""

    hd_eval: RunRecord
    baselines: tuple[RunRecord, ...]

    @property
    def all(self) -> tuple[RunRecord, ...]:
        return (self.hd_eval, *self.baselines)


def obtain_runs(store: Store, dataset: str, aspect: str) -> Runs:
    """The HD-Eval run first (it draws the split), then each baseline on exactly that split."""
    spec = hd_eval_spec(dataset, aspect)
    hd = obtain_run(store, spec)
    baselines = tuple(obtain_run(store, baseline_spec(m, spec), hd.split) for m in BASELINES)
    return Runs(hd, baselines)


# --------------------------------------------------------------------------- the pictures

def idle(page) -> None:
    """Wait until Streamlit has finished the current script run (its status widget is gone)."""
    time.sleep(0.5)
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')")


def no_toasts(page) -> None:
    """Wait until passing notices (e.g. "The fitted tree is now editable") have faded out of the picture."""
    page.wait_for_function("() => !document.querySelector('[data-testid=stToast]')", timeout=30_000)


def open_page(browser, url: str):
    """A fresh tab on ``url`` at the README's viewport, once its first heading is drawn and the script is idle."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.goto(url)
    page.locator("[data-testid=stMain] h1").first.wait_for()
    idle(page)
    return page


def exception_shown(page) -> str:
    """The first exception box the page draws ("" when none): a picture with one is not what the README shows."""
    box = page.locator("[data-testid=stException]")
    return box.first.inner_text().splitlines()[0] if box.count() else ""


def select_hd_run(page, run: RunRecord) -> None:
    """Choose ``run`` in the page's run picker: it opens on the newest HD-Eval run, which may be another one."""
    page.get_by_role("combobox", name="HD-Eval run", exact=True).click()
    page.get_by_role("option").filter(has_text=f"#{run.id} · ").first.click()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # no focus ring in the picture
    idle(page)


def frame_tree(page, run: RunRecord) -> None:
    """Scroll so the run picker and the whole tree are in view; when both do not fit, the tree (with its
    round's heading at the top) is what the picture is for."""
    page.locator("[data-testid=stSelectbox]").filter(has_text="HD-Eval run").first.evaluate(
        "e => e.scrollIntoView()")
    box = page.locator(".js-plotly-plot").first.bounding_box()
    if box is None or box["y"] + box["height"] > VIEWPORT["height"]:
        page.get_by_role("heading", name=f"Round of run #{run.id}").evaluate("e => e.scrollIntoView()")


def shoot_hd_eval(browser, url: str, run: RunRecord, path: Path) -> str:
    """The HD-Eval page on ``run``, its criteria tree in view; returns what the picture shows instead, if not."""
    page = open_page(browser, f"{url}/hd_eval")
    try:
        select_hd_run(page, run)
        note = ""
        if run.status == "finished":
            page.locator(".js-plotly-plot").first.wait_for()
            idle(page)
            no_toasts(page)
            frame_tree(page, run)
        else:
            note = f"run #{run.id} has no criteria tree ({run.status}: {run.message or 'no message'})"
        page.mouse.move(VIEWPORT["width"] - 5, VIEWPORT["height"] - 5)  # no hover label, no sidebar button
        time.sleep(0.5)
        page.screenshot(path=str(path))
        error = exception_shown(page)
        return "; ".join(filter(None, [note, error and f"the page shows an exception: {error}"]))
    finally:
        page.context.close()


LAST_PLOT_BOTTOM = """() => {
    const plots = document.querySelectorAll('.js-plotly-plot');
    const main = document.querySelector('[data-testid=stMain]');
    return plots[plots.length - 1].getBoundingClientRect().bottom + (main ? main.scrollTop : 0);
}"""
"""Where the page's last plot ends, counted from the top of the page: the app scrolls inside ``stMain``, not the
document, so a "full page" screenshot would only hold the first screen."""


def shoot_compare(browser, url: str, path: Path, *, plots: bool = True, margin: int = 16) -> str:
    """The Compare page from its top down to its last plot, once they are drawn; what went wrong ("" if nothing).

    The page is laid out at the README's viewport; the window is then made as tall as that stretch of the page
    (same width, so nothing reflows) to photograph it in one piece. What comes below the plots (the items where
    the judges fail) is left out: a picture thousands of pixels tall is not read. Without ``plots`` (no run
    finished, so the page draws none) the first screen is taken as it is.
    """
    page = open_page(browser, f"{url}/compare")
    try:
        if plots:
            page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot').length >= {COMPARE_PLOTS}")
            idle(page)
            bottom = int(page.evaluate(LAST_PLOT_BOTTOM)) + margin
            page.set_viewport_size({"width": VIEWPORT["width"], "height": max(VIEWPORT["height"], bottom)})
            time.sleep(1.0)  # the plots answer the resize event
            idle(page)
        page.mouse.move(VIEWPORT["width"] - 5, 5)
        page.screenshot(path=str(path))
        error = exception_shown(page)
        return error and f"the page shows an exception: {error}"
    finally:
        page.context.close()


def shown_path(db: Path) -> Path:
    """``db`` as the app is given it: the sidebar prints the database file, so inside the checkout it is given
    relative to it (the app runs there) and no machine's folders end up in the README's pictures."""
    db = db.resolve()
    return db.relative_to(ROOT) if db.is_relative_to(ROOT) else db


def take_pictures(db: Path, out: Path, runs: Runs) -> dict[str, str]:
    """Start the app on ``db``, photograph both pages into ``out``; picture file name -> what to say about it."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    from judge_engine.bench.app_latency import launch_browser, start_app, stop_app

    log = db.parent / "logs" / "screenshots-streamlit.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    say(f"starting the app on {db} (log: {log})")
    try:
        proc, url = start_app(shown_path(db), log, user="screenshots")
    except RuntimeError as exc:
        raise Refused(f"the app did not start; see {log}: {str(exc).splitlines()[0]}") from None
    notes = {}
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            any_finished = any(r.status == "finished" for r in runs.all)  # else the Compare page draws no plot
            shots = {"hd-eval-tree.png": lambda path: shoot_hd_eval(browser, url, runs.hd_eval, path),
                     "compare.png": lambda path: shoot_compare(browser, url, path, plots=any_finished)}
            for name, shoot in shots.items():
                started = time.time()
                try:
                    notes[name] = shoot(out / name)
                except PlaywrightError as exc:
                    raise Refused(f"{name}: the browser gave up: {str(exc).splitlines()[0]}") from None
                say(f"{out / name}: taken in {elapsed(time.time() - started)}"
                    + (f" ({notes[name]})" if notes[name] else ""))
            browser.close()
    finally:
        stop_app(proc)
    return notes


# --------------------------------------------------------------------------- the captions

def run_line(run: RunRecord) -> str:
    """One run in the captions: what it is, how it ended, what it measured and cost."""
    words = [f"run #{run.id}, {run.method}: {run.status}"]
    if run.summary:
        s = run.summary
        rho = (s.correlations or {}).get("spearman")
        words.append(f"{s.scored} of {s.n} test items scored"
                     + (f", Spearman {rho:.2f} at {s.level} level" if rho is not None else
                        f", no Spearman at {s.level} level (its scores do not vary, or too few items)"))
        words.append(f"{s.ledger.calls + s.ledger.cache_hits} LLM requests, {elapsed(s.seconds)}")
    elif run.message:
        words.append(run.message.splitlines()[0])
    return "; ".join(words)


def captions(runs: Runs, notes: dict[str, str], dataset: str, aspect: str, taken: date) -> str:
    """``README.md`` of the pictures: what each shows, on which model, data and split, and when."""
    hd = runs.hd_eval
    split = hd.split
    sizes = (f"{len(split.train_ids)} training items, {len(split.test_ids)} test items (split seed {split.seed}; "
             "test keeps whole groups)") if split else "no split"
    backend = LLMConfig.from_dict(hd.llm).backend
    finished = [r for r in runs.all if r.status == "finished"]
    lines = [
        "# Screenshots",
        "",
        f"Made by `python tools/screenshots.py` on {taken.isoformat()} (run it again to remake them; do not edit "
        "by hand). Model: SmolLM2-135M-Instruct, embedded "
        f"(llama-cpp-python, backend `{backend}`). Dataset: {dataset}, aspect {aspect}; {sizes}.",
        "",
        "Runs (the HD-Eval page's quick first look, then its baselines on the same split):",
        "",
        *[f"- {run_line(r)}" for r in runs.all],
        "",
        "## hd-eval-tree.png",
        "",
        "![HD-Eval page](hd-eval-tree.png)",
        "",
        f"The HD-Eval page on run #{hd.id} (quick first look: {hd.params.get('max_layers')} layers, at most "
        f"{hd.params.get('k_child')} children per criterion) of SmolLM2-135M-Instruct (embedded) on "
        f"{dataset}/{aspect}: " + ("the criteria tree the model built, coloured by permutation importance, beside "
                                   "the correlation of each layer." if hd.status == "finished" else
                                   "the run ended without a judge, so there is no tree; the picture shows what "
                                   "the page says instead."),
    ]
    if notes.get("hd-eval-tree.png"):
        lines += ["", f"Note: {notes['hd-eval-tree.png']}."]
    lines += [
        "",
        "## compare.png",
        "",
        "![Compare page](compare.png)",
        "",
        f"The Compare page on {dataset}/{aspect} with the {len(finished)} finished runs on the same test items "
        f"({', '.join(f'#{r.id} {r.method}' for r in finished) or 'none'}), all by SmolLM2-135M-Instruct "
        "(embedded), from the top of the page down to its plots: the comparison table, the trust checks, the "
        "correlations with their intervals, cost, human against judge scores and the score distributions.",
    ]
    if len(finished) < len(runs.all):
        lines += ["", "Note: " + "; ".join(f"run #{r.id} ({r.method}) is not on it: it {r.status}"
                                           for r in runs.all if r.status != "finished") + "."]
    if notes.get("compare.png"):
        lines += ["", f"Note: {notes['compare.png']}."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.time()
    try:
        why = browser_problem()
        if why:
            raise Refused(f"no screenshots without Chromium and Playwright: {why}")
        args.db.parent.mkdir(parents=True, exist_ok=True)
        store = Store(args.db)
        why = dataset_problem(store, args.dataset, args.aspect)
        if why:
            raise Refused(why)
        runs = obtain_runs(store, args.dataset, args.aspect)
        say(f"runs ready after {elapsed(time.time() - started)}: "
            + ", ".join(f"#{r.id} {r.method} {r.status}" for r in runs.all))
        args.out.mkdir(parents=True, exist_ok=True)
        notes = take_pictures(args.db, args.out, runs)
        (args.out / "README.md").write_text(captions(runs, notes, args.dataset, args.aspect, date.today()),
                                            encoding="utf-8")
    except (Refused, ValueError, NotFound, OSError) as exc:  # a refused spec, an unreadable file: one line
        print(f"screenshots: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2
    say(f"done in {elapsed(time.time() - started)}: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""App latency (benchmark 7): time to first render of each page in headless Chromium.

The real app (``streamlit run app.py``) is started on a free port with its
own database; Playwright drives Debian's ``/usr/bin/chromium`` (override
with ``$CHROMIUM``). For each page of ``app.py``'s navigation, a fresh
browser tab opens the page's URL and the benchmark records the seconds
until the first heading of the page is drawn (first render) and until
Streamlit's script run is over (idle); medians over repeats after one
warm-up visit. With ``--compare-items N`` (1,600 in the issue) the database
also holds a synthetic dataset of N items with ``--compare-runs K`` (default
4) finished direct-scoring runs (scored by the real llama.cpp backend from
pre-inserted cache rows, see :mod:`.scale`; each run has its own rows, so
their scores differ), and the comparison page, which
opens with all K runs selected, is timed until its four plots are drawn: once
as it opens (with the probes of every run) and once with ``?probes=off``, each
on a fresh server, so the probes' share of the page's time is measured side by
side. Each run's probes are computed and kept as it finishes, as the app's
worker does; a third row opens the page on a copy of the database with no
report kept, whose first visit computes them (``plots_s``: until the four plots
are drawn, which no longer wait for the probes).

With ``--loop N`` (no browser needed) it also times the annotator's loop (issue 62 item 6): N clicks each of
HD-Eval's "Run next round with this tree" (paper-default tree) and HypoEval's "Re-score with the accepted
hypotheses" (its 5 hypotheses) when every request is in the cache, until the page has drawn the finished run
(:mod:`.refit_loop`).

The app is started with ``$JUDGE_WORKBENCH_USER`` set, so a fresh session
goes past the name gate of :func:`pages.ui.auth.sign_in` (whose own
"Judge Workbench" heading would otherwise be timed on every page); each row
names the heading it waited for. Streamlit's ``st.cache_data`` is shared by
every session of the server, so the first visit of a page computes what
later visits reuse: each row gives the first visit (``cold_*``) beside the
medians.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator
from ..environment import environment

from . import ROOT, med, result

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def add_arguments(parser) -> None:
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pages", nargs="*", default=None, help="page file stems (default: every page in app.py)")
    parser.add_argument("--compare-items", type=int, default=0, help="also time the compare page on N items")
    parser.add_argument("--compare-runs", type=int, default=4,
                        help="finished runs on the --compare-items dataset (all selected on the compare page)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per page before giving up")
    parser.add_argument("--loop", type=int, default=0,
                        help="also time N clicks each of HD-Eval's next round and HypoEval's re-score that need no "
                             "new LLM call, until the page shows the finished run (see .refit_loop)")


def available() -> str | None:
    """``None`` when the browser benchmark can run here, else why not."""
    if not Path(CHROMIUM).is_file():
        return f"no chromium at {CHROMIUM}"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    return None


def app_pages() -> list[tuple[str, str]]:
    """(file stem, URL path) of every page in ``app.py``'s navigation; the default page is at '/'."""
    out = []
    for line in (ROOT / "app.py").read_text(encoding="utf-8").splitlines():
        m = re.search(r'st\.Page\("pages/(\w+)\.py"', line)
        if m:
            out.append((m.group(1), "" if "default=True" in line else m.group(1)))
    return out


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the app binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(db: Path, log: Path, *, user: str | None = None) -> tuple[subprocess.Popen, str]:
    """``streamlit run app.py`` on ``db`` and a free local port, once it answers; the process and its URL.

    ``user`` is the display name every session signs in with (default ``$JUDGE_WORKBENCH_USER``, else
    ``bench``): without one every fresh session stops at the name gate before the page runs. The server's
    output goes to ``log``; a server that does not answer within 90 s is stopped and its log's end raised.
    """
    port = free_port()
    env = dict(os.environ, JUDGE_WORKBENCH_DB=str(db),
               JUDGE_WORKBENCH_USER=user or os.environ.get("JUDGE_WORKBENCH_USER") or "bench")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
                             "--server.address", "127.0.0.1", "--server.port", str(port),
                             "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                stop_app(proc)
                raise RuntimeError(f"streamlit did not start:\n{log.read_text()[-2000:]}") from None
            time.sleep(0.5)


def stop_app(proc: subprocess.Popen) -> None:
    """Stop a server :func:`start_app` started, with everything it spawned (it leads its own process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)


def launch_browser(playwright) -> Any:
    """Debian's headless Chromium under Playwright (``playwright install`` cannot download browsers here)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                      args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])


def seed_compare(db: Path, n: int, runs: int = 4, *, keep_probes: bool = True,
                 kept: list[float] | None = None) -> list[int]:
    """A synthetic dataset of ``n`` items and ``runs`` finished direct-scoring runs on it; returns the run ids.

    Every reply comes from cache rows inserted beforehand (no model call); each run has its own rows (another
    ``max_tokens``, another noise seed), so the runs' scores differ. ``keep_probes``: each run's probes are
    computed and kept once it is finished, as the app's worker does (their seconds appended to ``kept``).
    """
    from ..llm import LLMConfig
    from ..llm.llamacpp import embedded_model_path
    from ..probes import probe_run
    from ..runs import RunSpec, create_run, execute_run
    from ..store import Store
    from .scale import synthetic_dataset, warm_cache
    kept = [] if kept is None else kept
    store = Store(db)
    dataset = synthetic_dataset(n)
    store.save_dataset(dataset)
    ids = []
    for k in range(runs):
        # each run its own reply budget, so its own cache rows and noise: runs that differ, as compared runs do
        budget = 32 + k
        warm_cache(store, dataset, model_id=embedded_model_path().name, seed=k, max_tokens=budget)
        ids.append(create_run(store, RunSpec(method="direct", dataset=dataset.name, aspect="quality",
                                             params={"max_tokens": budget}, train_size=0, test_size=None,
                                             llm=LLMConfig())))
        execute_run(store, ids[-1])
        if keep_probes:  # what the app's worker does once a run is finished (judge_engine.__main__._keep_probes)
            started = time.perf_counter()
            probe_run(store, ids[-1])
            kept.append(time.perf_counter() - started)
    store.close()
    return ids


SCRIPT_DONE = ("() => { const app = document.querySelector('[data-testid=stApp]');"
               " return app && app.getAttribute('data-test-script-state') === 'notRunning'; }")
"""True once the page's script run is over (``stApp``'s ``data-test-script-state``)."""


def _visit(browser, url: str, timeout_ms: float, *, plots: int = 0) -> dict[str, Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    start = time.perf_counter()
    page.goto(url)
    # the first sign of the page in its main pane: the spinner of a page's first run, or its heading
    page.locator("[data-testid=stMain] [data-testid=stSpinner], [data-testid=stMain] h1").first.wait_for()
    sign = time.perf_counter() - start
    heading = page.locator("[data-testid=stMain] h1").first
    heading.wait_for()
    first = time.perf_counter() - start
    title = heading.inner_text().strip()
    drawn = None
    if plots:  # what the reader sees: the plots, while the script may still fill the probes above them
        page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot').length >= {plots}")
        drawn = time.perf_counter() - start
    time.sleep(0.3)
    # the script run's end as the app says it: Streamlit 1.67 draws no stStatusWidget while a script runs (the old
    # wait returned at once, so idle_s was the heading or the plots, never the script's end)
    page.wait_for_function(SCRIPT_DONE)
    if plots:
        page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot').length >= {plots}")
    idle = time.perf_counter() - start
    error = page.locator("[data-testid=stException]").count() > 0
    context.close()
    return {"first_sign_s": sign, "first_render_s": first, "plots_s": drawn, "idle_s": idle, "exception": error,
            "heading": title}


def _row(page: str, visits: list[dict[str, Any]], items: int | None, runs: int | None) -> dict[str, Any]:
    """Medians over ``visits`` and the first (cold-cache) visit on its own."""
    return {"page": page, "heading": visits[0]["heading"], "items": items, "runs": runs,
            "first_sign_s": med([v["first_sign_s"] for v in visits]),
            "first_render_s": med([v["first_render_s"] for v in visits]),
            **({"plots_s": med([v["plots_s"] for v in visits]), "cold_plots_s": visits[0]["plots_s"]}
               if visits[0]["plots_s"] is not None else {}),
            "idle_s": med([v["idle_s"] for v in visits]),
            "cold_first_sign_s": visits[0]["first_sign_s"], "cold_first_render_s": visits[0]["first_render_s"],
            "cold_idle_s": visits[0]["idle_s"],
            "exception": any(v["exception"] for v in visits)}


_FIRST_VISITS: list[dict[str, Any]] = []
"""The warm-up visit of each fresh server :func:`_app` started: the first visit of the app's home page."""


def _copy_without_probes(db: Path, to: Path) -> None:
    """A copy of database ``db`` at ``to`` whose kept probe reports are deleted."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(db)) as source, contextlib.closing(sqlite3.connect(to)) as copy:
        source.backup(copy)
        if copy.execute("select 1 from sqlite_master where name = 'probe_reports'").fetchone():
            copy.execute("delete from probe_reports")
            copy.commit()


@contextlib.contextmanager
def _app(db: Path, log: Path, timeout: float) -> Iterator[tuple[Any, str]]:
    """A fresh app server on ``db`` (its caches empty) and a headless browser, warmed up by one visit."""
    from playwright.sync_api import sync_playwright
    proc, url = start_app(db, log)
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            # warm-up: the fresh server's first script run imports everything (kept as _FIRST_VISITS' row)
            _FIRST_VISITS.append(_visit(browser, url, timeout * 1000))
            yield browser, url
            browser.close()
    finally:
        stop_app(proc)


def time_loops(tmp: Path, clicks: int, timeout: float) -> list[dict[str, Any]]:
    """Rows of the fast loop (issue 62 item 6): per method, ``clicks`` clicks of the button that starts a run
    answered by the cache alone, until the page shows it finished (:func:`.refit_loop.time_click`; medians, and
    each click's total)."""
    from ..store import Store
    from . import refit_loop
    from .stub_server import StubServer
    rows = []
    with StubServer() as stub:
        db = tmp / "loop.db"
        refit_loop.seed_runs(db, stub.base_url)
        store = Store(db)
        env = {"JUDGE_WORKBENCH_DB": str(db), "JUDGE_WORKBENCH_USER": os.environ.get("JUDGE_WORKBENCH_USER") or "bench"}
        # the page's script runs in this process and reads its database and user from the environment, which is
        # given back as it was afterwards
        with environment(env):
            for method in refit_loop.BUTTONS:
                clicked = []
                for _ in range(clicks):
                    source = next(r.id for r in store.runs(limit=500) if r.method == method and r.status == "finished")
                    clicked.append(refit_loop.time_click(ROOT / "app.py", db, method, source, timeout=timeout))
                rows.append({"page": f"{method} loop", "clicks": clicks,
                             **{k: med([c[k] for c in clicked]) for k in ("warm_ready_s", "click_s", "finished_s",
                                                                          "panel_read_s", "results_s", "shown_s",
                                                                          "page_cpu_s", "worker_cpu_s",
                                                                          "next_standby_cpu_s")},
                             "load": round(os.getloadavg()[0], 1),
                             "warm_workers": sum(c["warm_worker"] for c in clicked),
                             "each_shown_s": [round(c["shown_s"], 2) for c in clicked],
                             "statuses": sorted({c["status"] for c in clicked}),
                             "llm_calls": sum(c["llm_calls"] for c in clicked),
                             "cache_hits": sum(c["cache_hits"] for c in clicked),
                             "exception": any(c["exception"] for c in clicked)})
        rows.append({"page": "requests that reached the server", **stub.stats()})
        store.close()
    return rows


def run(*, repeats: int = 3, pages: list[str] | None = None, compare_items: int = 0, compare_runs: int = 4,
        timeout: float = 300.0, loop: int = 0, **_: Any) -> dict[str, Any]:
    if compare_items and compare_runs < 1:
        raise ValueError(f"--compare-runs must be at least 1 (got {compare_runs})")
    why = available()
    if why and not loop:
        raise RuntimeError(f"the app benchmark needs Chromium and Playwright: {why}")
    targets = [(stem, path) for stem, path in app_pages() if not pages or stem in pages]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-app-") as tmp:
        db = Path(tmp) / "workbench.db"
        if compare_items and not why:
            kept: list[float] = []
            seed_compare(db, compare_items, compare_runs, kept=kept)
            # the same runs with no probe report kept (a database from before they were kept, or a run finished
            # in a terminal): the page's first visit computes and keeps them
            unkept = Path(tmp) / "unkept.db"
            _copy_without_probes(db, unkept)
            # the page with and without its probes, each on a server of its own so every first visit is cold
            for label, query, path in (("compare (plots drawn)", "", db),
                                       ("compare without probes", "?probes=off", db),
                                       ("compare, probes computed on the visit", "", unkept)):
                with _app(path, Path(tmp) / "streamlit.log", timeout) as (browser, url):
                    visits = [_visit(browser, f"{url}/compare{query}", timeout * 1000, plots=4)
                              for _ in range(repeats)]
                rows.append(_row(label, visits, compare_items, compare_runs))
            with_probes, without = rows[-3], rows[-2]
            with_probes["probes_kept_by_worker_s"] = [round(x, 2) for x in kept]
            for key in ("idle_s", "cold_idle_s"):
                with_probes[f"probes_share_of_{key}"] = round(1 - without[key] / with_probes[key], 4)
        if loop:  # the script runs in this process: no browser needed
            rows.extend(time_loops(Path(tmp), loop, timeout))
            if why:
                targets = []
        with (_app(db, Path(tmp) / "streamlit.log", timeout) if targets else contextlib.nullcontext((None, None))
              ) as (browser, url):
            if targets:
                rows.append(_row("first visit of a fresh server (home)", _FIRST_VISITS[-1:], None, None))
            for stem, path in targets:
                visits = [_visit(browser, f"{url}/{path}", timeout * 1000) for _ in range(repeats)]
                rows.append(_row(stem, visits, None, None))
    return result("app", config={"repeats": repeats, "pages": [t[0] for t in targets], "compare_items": compare_items,
                                 "loop": loop,
                                 "compare_runs": compare_runs if compare_items else 0},
                  rows=rows, summary={"pages": len(rows), "pages_with_exception": sum(bool(r.get("exception")) for r in rows),
                                      "slowest_idle_s": max((r["idle_s"] for r in rows if "idle_s" in r), default=None)},
                  notes=["first_sign_s: until the main pane shows a spinner (a page's first run in the server) or "
                         "the page's heading; first_render_s: until the page's first heading is drawn; idle_s: until the script run "
                         "is over (and, for the compare row, its four plots are drawn); medians after a warm-up",
                         "cold_*: the page's first visit, which fills the server's st.cache_data for later visits "
                         "(each compare row has a server of its own, so its first visit computes everything)",
                         "probes_share_of_*: the share of the compare page's time that its probes take, from the "
                         "row without them (?probes=off) measured on the same database",
                         "plots_s: until the compare page's four plots are drawn (the script may still be filling the "
                         "probes above them); probes_kept_by_worker_s: each run's probes computed and kept once it "
                         "finished, as the app's worker does; 'probes computed on the visit': the same runs with no "
                         "report kept (a database from before, or runs finished in a terminal)",
                         "loop rows (--loop N, no browser needed): a finished HD-Eval run (paper defaults) and "
                         "HypoEval run on a simulated world whose replies are all cached; the button clicked in the "
                         "page's script (AppTest) once the page's warm worker is ready (warm_ready_s after the page was drawn; warm_workers: clicks that had one): click_s its script run (the run created, its worker started), "
                         "finished_s until the run is finished, panel_read_s until the progress panel's next read "
                         "(every 0.5 s while the run is young, then 2 s), shown_s until the page's run showing the results is over; llm_calls: requests "
                         "not answered by the cache (0 expected); page_cpu_s, worker_cpu_s, next_standby_cpu_s: CPU seconds of "
                         "the page's two script runs, of the warm worker that executed the run, and of the next run's "
                         "warm worker importing meanwhile (a loaded machine inflates the wall times, not these); load: "
                         "the 1-minute load average when the row was made"])

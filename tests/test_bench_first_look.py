"""``python -m judge_engine.bench first-look``: the pages' quick first look, timed until its last run ends.

No real model: the bench is held to the pages (each page's button, clicked in an AppTest, starts the runs the
bench starts), a look is measured with its workers executed in-process on a scripted LLM, and a look that
outlives its timeout is cancelled with real worker processes waiting on a server that never answers. Facts
only, never wall-clock values.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine import data, runs
from judge_engine.bench import first_look
from judge_engine.bench.__main__ import main
from judge_engine.llm import LLMConfig
from judge_engine.records import Aspect, Dataset, Sample
from judge_engine.store import Store
from tests.scripted import scripted_llm

os.environ.setdefault("JUDGE_BENCH_QUIET", "1")

APP = Path(__file__).resolve().parents[1] / "app.py"
BUTTONS = {"hypoeval": "hypoeval_quick", "hpss": "hpss_quick", "active_critic": "active_critic_quick",
           "hd_eval": "hd_quick"}


def looked_at() -> Dataset:
    """36 outputs in 12 groups over 3 systems, two aspects (one 'overall'); the human score of "output number N"
    is ``tests.scripted.tiny_oracle``'s, so scripted judges agree with the humans and the methods find one."""
    samples = tuple(Sample(id=f"s{i}", input=f"source text {i // 3}", output=f"output number {i}", group_id=f"g{i // 3}",
                           system_id=f"sys{i % 3}",
                           human={"clarity": float(1 + (i * 7) % 5), "overall": float(1 + (i * 7) % 5)})
                    for i in range(36))
    return Dataset(name="looked", task="toy summarization", samples=samples, natural_level="group",
                   aspects=(Aspect("clarity", 1, 5, "Easy to follow."), Aspect("overall", 1, 5, "Good on the whole.")),
                   input_label="Article", output_label="Summary")


def recorder(monkeypatch) -> list[int]:
    started: list[int] = []
    monkeypatch.setattr(runs.launching, "start_run", lambda db_path, run_id, **kw: started.append(run_id))
    return started


def created(store: Store, run_ids: list[int]) -> list[tuple]:
    out = []
    for i in run_ids:
        r = store.run(i)
        out.append((r.method, r.aspect, r.params, r.split.train_ids, r.split.test_ids, r.llm))
    return out


@pytest.mark.parametrize("method", first_look.METHODS_MEASURED)
def test_the_bench_starts_what_the_pages_button_starts(method, db, monkeypatch, tmp_path):
    """Each page's "Quick first look" on the form as it opens, against the bench's :func:`page_look`: the same
    runs (method, aspect, every parameter, split) and the same baselines, in the same order."""
    Store(db).save_dataset(looked_at())
    started = recorder(monkeypatch)
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.switch_page(f"pages/{method}.py").run()
    at.button(key=BUTTONS[method]).click().run()
    assert not at.exception, [e.value for e in at.exception]
    by_page = created(Store(db), list(started))
    assert len(by_page) == (2 if method == "hpss" else 3)

    started.clear()
    bench_store = Store(tmp_path / "bench.db")
    bench_store.save_dataset(looked_at())
    look = first_look.page_look(method, looked_at())
    chosen, baselines = first_look.choose(bench_store, look)
    runs.launch(bench_store, chosen.spec, baselines=baselines)
    assert created(bench_store, list(started)) == by_page
    if method == "active_critic":
        assert by_page[0][1] == "overall"


def in_process_worker(db_path, run_id, **_):
    """A worker that executes the run here, on a scripted LLM (a failing run is recorded, as a worker's is)."""
    store = Store(db_path)
    llm, _backend = scripted_llm(store, logprobs=True)
    try:
        runs.execute_run(store, run_id, llm=llm)
    except Exception:
        pass


def test_a_look_records_the_run_its_baselines_and_the_estimate(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runs.launching, "start_run", in_process_worker)
    monkeypatch.setattr(data, "load_benchmark", lambda name, *a, **k: looked_at())
    assert main(["--out", str(tmp_path), "first-look", "--methods", "hypoeval", "hpss", "--repeats", "2",
                 "--dataset", "looked", "--poll-s", "0.05"]) == 0
    doc = json.loads((tmp_path / "first-look.json").read_text())
    assert {"benchmark", "date", "machine", "config", "summary", "rows", "notes", "looks"} <= set(doc)
    assert [(x["method"], x["repeat"]) for x in doc["looks"]] == [("hypoeval", 0), ("hpss", 0), ("hpss", 1),
                                                                  ("hypoeval", 1)], "interleaved"
    for look in doc["looks"]:
        roles = [(r["role"], r["method"]) for r in look["runs"]]
        if look["method"] == "hpss":
            assert roles == [("run", "hpss"), ("baseline", "hpss")]
            assert look["runs"][1]["title"] == "MT-Bench base prompt"
        else:
            assert roles == [("run", "hypoeval"), ("baseline", "direct"), ("baseline", "geval")]
        assert look["status"] == "finished" and look["wall_s"] > 0
        assert look["runs"][0]["run_id"] == 1, "every look on a new store: no call answered by an earlier look"
        for r in look["runs"]:
            assert r["status"] == "finished" and r["wall_s"] > 0 and "error" not in r
            assert r["calls"] + r["cache_hits"] > 0  # a baseline may find its calls made by the run (same store)
            assert r["n_test"] >= 10 and r["spearman"] is not None
        assert look["calls"] == sum(r["calls"] for r in look["runs"])
        # the page's estimate on a fresh store: each method's measured speed on the embedded model, scaled to
        # the dataset's item length
        chars = runs.estimates.mean_item_chars(looked_at())
        speed = {m: s * runs.estimates.length_factor(m, chars)
                 for m, s in runs.EMBEDDED_SECONDS_PER_COUNTED_CALL.items()}
        assert look["estimate_calls"] > 0 and look["estimate_label"]
        # a look at the request sizes the speed was measured at keeps it; a larger one (HPSS's quick look asks
        # for 600-character explanations, its measured look for 100) is timed by its tokens
        spec = runs.RunSpec(method=look["method"], dataset="looked", aspect=look["aspect"], params=look["params"])
        per_call = look["seconds_per_call_assumed"]
        if runs.estimates.measured_setting(spec):
            assert per_call == pytest.approx(speed[look["method"]], abs=1e-4)
        else:
            assert look["method"] == "hpss" and look["estimate_basis"].startswith("its tokens at")
        assert len(look["baseline_estimates"]) == len(look["runs"]) - 1
        whole = look["estimate_calls"] + sum(b["calls"] for b in look["baseline_estimates"])
        # direct scoring and G-Eval are timed by their tokens at the model's throughput (runs.estimates.TOKEN_TIMED)
        timed = runs.estimates.TOKEN_TIMED
        assert all(b["minutes"] > 0 for b in look["baseline_estimates"] if b["method"] in timed)
        # each baseline at its own estimate: HPSS's base prompt at its paper sizes is timed by its tokens too
        seconds = look["estimate_calls"] * per_call + sum(b["minutes"] * 60 for b in look["baseline_estimates"])
        assert look["look_estimate_calls"] == whole
        # the figures come back rounded from the bench's JSON: a hundredth of a second
        assert look["look_estimate_s"] == pytest.approx(runs.looks.LOOK_START_SECONDS + seconds, abs=0.01)
        assert look["estimate_over_actual"] > 0 and len(look["load_before"]) == len(look["load_after"]) == 3
        assert look["workers_left_after_s"] is not None  # the next look started with no worker of this one
    summary = doc["summary"]
    assert summary["hpss"]["looks"] == 2 and summary["hpss"]["timed_out"] == 0 and summary["hpss"]["median_wall_s"] > 0
    assert summary["overall"]["looks"] == 4
    assert len(doc["rows"]) == 4 and "runs" not in doc["rows"][0]
    out, err = capsys.readouterr()
    assert "| hypoeval |" in out and "| hpss |" in out
    assert err.count("starting") == 4 and err.count("finished after") == 4
    assert doc["config"]["stores"] is None, "the temporary stores are removed without --keep"


def test_a_look_that_outlives_its_timeout_is_cancelled_and_no_run_is_left_running(tmp_path):
    """Real workers on a server that accepts connections and never answers: the look is cancelled at its
    timeout, every run ends interrupted with the reason, and no worker process is left."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    try:
        llm = LLMConfig(backend="openai", model="m", base_url=f"http://127.0.0.1:{silent.getsockname()[1]}/v1",
                        max_retries=0)
        store = Store(tmp_path / "look.db")
        look = first_look.measure_look(store, "active_critic", looked_at(), seed=0, llm=llm, timeout_s=4.0,
                                       poll_s=0.2, grace_s=3.0)
    finally:
        silent.close()
    assert look["status"] == first_look.TIMED_OUT and look["estimate_over_actual"] is None
    assert look["workers_left_after_s"] is not None, "measure_look returns once its workers have exited"
    assert look["estimate_calls"] > 0 and look["look_estimate_s"] is None, "no timing on this backend yet"
    assert [r["role"] for r in look["runs"]] == ["run", "baseline", "baseline"]
    for r in look["runs"]:
        assert r["status"] == "interrupted" and r["wall_s"] is None and r["error"].startswith("timed out")
        assert first_look.worker_pids(store, r["run_id"]) == []
        assert store.run(r["run_id"]).status == "interrupted"
    summary = first_look.summarize_looks([{**look, "repeat": 0}], ["active_critic"])
    assert summary["active_critic"]["timed_out"] == 1 and summary["overall"]["timed_out"] == 1


def test_an_unknown_method_or_aspect_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(data, "load_benchmark", lambda name, *a, **k: looked_at())
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path), "first-look", "--methods", "direct"])
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path), "first-look", "--aspect", "nope", "--dataset", "looked"])
    assert "nope" in capsys.readouterr().err and not list(tmp_path.glob("*.json"))


def test_the_next_look_waits_for_the_last_ones_workers_to_exit(monkeypatch):
    """A run is stamped finished while its worker may still be closing its model; the next look's estimate
    counts the threads running then, so the bench waits for those workers (and says when it gave up)."""
    polls = iter([[4242], [4242], []])
    monkeypatch.setattr(first_look, "worker_pids", lambda store, run_id: next(polls, []))
    waited = first_look.wait_for_workers_to_exit(None, [1])
    assert waited is not None and waited >= 0.2
    monkeypatch.setattr(first_look, "worker_pids", lambda store, run_id: [4242])
    assert first_look.wait_for_workers_to_exit(None, [1], timeout_s=0.3) is None

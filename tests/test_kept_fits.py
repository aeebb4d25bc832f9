"""HD-Eval's MLPs kept in the run's database (:mod:`judge_engine.runs.kept_fits`, issue 62 item 6): a run in a
fresh process reads the models an earlier run fitted on the same numbers instead of fitting them again, and its
judge and verdicts are the same to the last character."""

from __future__ import annotations

from judge_engine import aggregate
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.runs import RunSpec, create_run, execute_run
from judge_engine.runs.kept_fits import KeptFits
from judge_engine.store import Store
from tests.test_hd_eval import _dataset, _json_scripted


def test_a_kept_model_is_read_back_the_first_one_stays_and_a_viewer_keeps_nothing(tmp_path):
    keeper = KeptFits(Store(tmp_path / "w.db"))
    assert keeper.get("k") is None
    keeper.put("k", b"first")
    keeper.put("k", b"second")  # the same key is the same model: the first one stays
    assert keeper.get("k") == b"first" and KeptFits(Store(tmp_path / "w.db")).get("k") == b"first"
    viewer = KeptFits(Store(tmp_path / "w.db", read_only="a viewer"))
    viewer.put("v", b"x")  # nothing raised: the model is fitted again next time
    assert viewer.get("v") is None and viewer.get("k") == b"first"


def test_a_run_in_a_fresh_process_reads_the_mlps_an_earlier_run_fitted_and_ends_with_the_same_judge(store,
                                                                                                  monkeypatch):
    dataset = _dataset(12)
    store.save_dataset(dataset)
    spec = RunSpec(method="hd_eval", dataset=dataset.name, aspect="clarity", train_size=8, test_size=4,
                   params={"max_layers": 1, "pi_repeats": 2})
    mlp = type(aggregate.make_aggregator("nn", n_samples=8))
    fit, fits = mlp.fit, []
    monkeypatch.setattr(mlp, "fit", lambda self, *a, **kw: (fits.append(1), fit(self, *a, **kw))[1])

    def run(split=None) -> tuple[int, int]:
        monkeypatch.setattr(aggregate, "_FITTED", {})  # a fresh process: nothing fitted in memory
        before = len(fits)
        run_id = create_run(store, spec, split=split)
        execute_run(store, run_id, llm=make_llm(LLMConfig(concurrency=4), store=store,
                                                backend=FakeBackend(_json_scripted)))
        return run_id, len(fits) - before

    first, fitted = run()
    # per group of aspects (1-5, 0-1) five folds; the whole-data model of the target's group, which scoring reads
    assert fitted == 2 * 5 + 1
    kept = store.db.execute("select count(*) from aggregator_fits").fetchone()[0]
    assert kept == fitted
    second, fitted_again = run(store.run(first).split)
    assert fitted_again == 0
    a, b = store.run(first), store.run(second)
    assert a.judge == b.judge and a.status == b.status == "finished"
    assert ([(v.sample_id, v.score) for v in store.load_verdicts(first)]
            == [(v.sample_id, v.score) for v in store.load_verdicts(second)])

"""How long a run will take (:mod:`judge_engine.runs.estimates`): calls before cache hits, and their minutes."""

import pytest

from judge_engine import runs
from judge_engine.llm import LLMConfig
from judge_engine.runs import RunSpec


def test_duration_from_history_or_the_embedded_default(store, tiny_dataset, started):
    store.save_dataset(tiny_dataset)
    spec = RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=6)
    first = runs.estimate_duration(store, spec)
    assert first.calls == 6 and first.seconds_per_call == pytest.approx(runs.EMBEDDED_SECONDS_PER_CALL)
    remote = runs.estimate_duration(store, RunSpec(**{**spec.__dict__, "llm": LLMConfig(backend="openai", model="m")}))
    assert remote.minutes is None and "no timing" in remote.describe()
    run_id = runs.launch(store, spec)[0].run_id
    store.update_run(run_id, ledger={"calls": 40, "seconds": 20.0})
    timed = runs.estimate_duration(store, spec)
    assert timed.seconds_per_call == pytest.approx(0.5) and "40 earlier requests" in timed.describe()

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


@pytest.mark.parametrize(("seconds_per_call", "label"), [(None, None), (1.0, "under 2 min"), (8.9, "under 2 min"),
                                                         (9.0, "about 2 min"), (60.0, "about 10 min")])
def test_one_wording_of_a_runs_time(seconds_per_call, label):
    """Ten requests: under 1.5 minutes the estimate is "under 2 min", never "1 min" or "0 min"."""
    duration = runs.Duration(calls=10, seconds_per_call=seconds_per_call, basis="measured")
    assert duration.label == label
    assert duration.describe() == ("10 requests; measured" if label is None else
                                   f"{label} ({seconds_per_call:.1f} s per request: measured)")

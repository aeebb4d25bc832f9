"""The ``simulate`` benchmark runs small: a row for every method and a JSON file (no figure is asserted)."""

from __future__ import annotations

import json

import pytest

from judge_engine.bench import __main__ as bench_main
from judge_engine.bench.simulate import METHODS, RUNNERS
from judge_engine.bench.simulated_judge import ASPECTS, SimulatedBackend, World, recognise_strategy
from judge_engine.hpss_auxiliaries import select_examples
from judge_engine.hpss_strategy import StrategyInputs, all_strategies, build_prompt
from judge_engine.llm import GenerationParams
from judge_engine.bench.simulated_judge import TASK


def test_simulate_smoke_two_seeds(tmp_path, capsys):
    methods = [m for m in METHODS if m in RUNNERS]
    code = bench_main.main(["--out", str(tmp_path), "simulate", "--seeds", "2", "--n-train", "24",
                            "--n-test", "24", "--methods", *methods])
    assert code == 0
    doc = json.loads((tmp_path / "simulate.json").read_text(encoding="utf-8"))
    rows = doc["rows"]
    assert not [r for r in rows if r["measure"] == "error"], [r.get("error") for r in rows]
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        assert mine, f"no row for {m}"
        assert all(r["seeds"] == 2 for r in mine)
    assert [w["seed"] for w in doc["worlds"]] == [0, 1]
    assert "hpss" in doc["worlds"][0] and doc["worlds"][0]["hypoeval_pool"]
    assert "| method | measure |" in capsys.readouterr().out


def test_every_strategy_prompt_is_recognised():
    """The simulated judge reads back the strategy of any prompt the HPSS template builder makes."""
    world = World(3, n_samples=40)
    aspect = ASPECTS[0]
    examples = {n: select_examples(world.samples[:30], aspect, n, 0) for n in (3, 5, 10)}
    sample = world.samples[35]
    for i, strategy in enumerate(all_strategies()[::7]):
        n = {"NoExample": 0, "Example3": 3, "Example5": 5, "Example10": 10}[strategy[5]]
        shown = tuple(examples[n][i % 2:]) if n else ()  # the search leaves the judged sample out: one fewer
        criteria = {"NoCriteria": None, "Human": aspect.definition,
                    "LLM": f"{aspect.name} : (self-generated criteria) ordered points."}[strategy[1]]
        prompt = build_prompt(strategy, sample, aspect, TASK, StrategyInputs(
            criteria=criteria, steps="1. Read.", examples=shown, questions="1. Why?", reference="A reference."))
        assert recognise_strategy(prompt) == strategy
        assert world.index_of_output(prompt) == 35


def test_malformed_budget_and_unrecognised_prompts():
    world = World(1, n_samples=20, malformed=0.5)
    backend = SimulatedBackend(world)
    replies = [backend.generate([{"role": "user", "content": f"Tell me a joke number {i}."}], GenerationParams()).text
               for i in range(40)]
    assert 5 < backend.stats["malformed"] < 35
    assert backend.stats["unrecognised"], "an unknown prompt must be counted, not answered as a judge"
    assert len(set(replies)) <= 2


@pytest.mark.parametrize("bad", [["--seeds", "0"], ["--malformed", "1.5"]])
def test_bad_options_end_in_one_message(tmp_path, bad, capsys):
    with pytest.raises(SystemExit) as exc:
        bench_main.main(["--out", str(tmp_path), "simulate", "--methods", "hpss", *bad])
    assert exc.value.code == 2
    assert "simulate" in capsys.readouterr().err

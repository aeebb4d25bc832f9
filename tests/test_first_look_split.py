"""A first look that can conclude (issue 62 item 1): a quick look's test split, and the README's `--test 40`, span
enough groups for a group-level interval, keep train and test groups apart, and a scripted judge that follows the
humans is called "ok" on them; a split that cannot conclude says so before it starts."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema
import numpy as np
import pytest

from judge_engine import data, metrics, structured, trust
from judge_engine.bench.stub_humans import HumanFollower
from judge_engine.data.splits import MIN_TEST_GROUPS
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.records import Aspect, Dataset, Sample
from judge_engine.runs import (QUICK_TEST, QUICK_TEST_SIZES, QUICK_TRAIN, QUICK_TRAIN_SIZES, RunSpec, create_run,
                               execute_run, quick_spec)

GROUPED = ("summeval", "hanna")
"""The benchmarks whose natural level is the group (16 and 11 outputs a source)."""
BY_SOURCE = (*GROUPED, "topical_chat")
"""Also Topical-Chat, read at the sample level: its 6 responses to a dialogue context are not independent, so its
items' interval resamples whole contexts and needs as many. Its test keeps whole contexts, so the quick look's 10
items are 2 of them (no interval): on a fast backend the look asks for 40, 7 contexts."""
ASPECT = {"summeval": "coherence", "hanna": "coherence", "topical_chat": "understandability"}


def _groups(dataset: Dataset, ids) -> set[str]:
    group_of = {s.id: s.group_id for s in dataset.samples}
    return {group_of[i] for i in ids}


@pytest.mark.parametrize("sizes", [(QUICK_TRAIN_SIZES[0], QUICK_TEST_SIZES[0]), (30, 40)],
                         ids=["quick on a fast backend", "default"])
def test_topical_chat_s_whole_contexts_span_an_interval_where_the_look_asks_for_40(shared_data, sizes):
    dataset = data.load_benchmark("topical_chat", shared_data)
    for seed in range(5):
        split = data.make_split(dataset, train_size=sizes[0], test_size=sizes[1], seed=seed)
        assert len(_groups(dataset, split.test_ids)) >= metrics.MIN_BOOTSTRAP_UNITS
        assert not _groups(dataset, split.test_ids) & _groups(dataset, split.train_ids)


@pytest.mark.parametrize("name", GROUPED)
@pytest.mark.parametrize("sizes", [(QUICK_TRAIN, QUICK_TEST), (QUICK_TRAIN_SIZES[0], QUICK_TEST_SIZES[0]), (30, 20),
                                   (30, 40)], ids=["quick", "quick on a fast backend", "readme", "default"])
def test_a_test_split_spans_an_intervals_groups_and_shares_none_with_train(shared_data, name, sizes):
    dataset = data.load_benchmark(name, shared_data)
    assert dataset.natural_level == ("sample" if name == "topical_chat" else "group")
    for seed in range(5):
        split = data.make_split(dataset, train_size=sizes[0], test_size=sizes[1], seed=seed)
        test_groups = _groups(dataset, split.test_ids)
        # whole groups put a quick look's 10 items in one article and --test 20 in two: no interval, no "ok"
        assert len(test_groups) >= max(MIN_TEST_GROUPS, metrics.MIN_BOOTSTRAP_UNITS)
        assert len(split.test_ids) >= max(sizes[1], trust.MIN_TEST_ITEMS)
        assert not test_groups & _groups(dataset, split.train_ids), "a group in both parts leaks its source"
        assert len(split.train_ids) == sizes[0]


def _follower_llm(store, datasets, noise=0.5):
    follower = HumanFollower(datasets, noise=noise)

    def reply(messages, params):
        return follower.reply(messages, structured.schema_of(params.json_schema) if params.json_schema else None)

    return make_llm(LLMConfig(), store=store, backend=FakeBackend(reply))


@pytest.mark.parametrize("name, look", [(name, look) for name in BY_SOURCE for look in ("quick", "fast", "readme")
                                        if (name, look) != ("topical_chat", "quick")])  # 2 contexts: see BY_SOURCE
def test_a_judge_that_follows_the_humans_is_called_ok(store, shared_data, monkeypatch, name, look):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(shared_data))
    dataset = data.load_benchmark(name)
    spec = RunSpec(method="direct", dataset=name, aspect=ASPECT[name], train_size=30, test_size=40)
    if look == "quick":
        spec = quick_spec(spec)
    elif look == "fast":
        spec = quick_spec(spec, train_size=QUICK_TRAIN_SIZES[0], test_size=QUICK_TEST_SIZES[0])
    assert trust.split_note(dataset, spec) == "", "nothing to warn of before it starts"
    run_id = create_run(store, spec)
    execute_run(store, run_id, llm=_follower_llm(store, [dataset]))
    report = trust.trust_report(store, run_id, n_bootstrap=400)
    assert report.test is not None and report.test.level == dataset.natural_level
    assert report.test.n_groups >= metrics.MIN_BOOTSTRAP_UNITS, "an interval over whole sources"
    assert report.verdict == "ok", report.reasons


def _small(groups: int, per_group: int) -> Dataset:
    samples = tuple(Sample(id=f"{g}-{k}", input=f"source {g}", output=f"output {g} {k}", group_id=f"g{g}",
                           human={"q": float(1 + (g + 2 * k) % 5)}) for g in range(groups) for k in range(per_group))
    return Dataset(name="small", task="", aspects=(Aspect("q", 1, 5),), samples=samples, natural_level="group")


def test_a_split_that_cannot_conclude_says_so_and_what_would():
    spec = RunSpec(method="direct", dataset="small", aspect="q", train_size=6, test_size=8)
    note = trust.split_note(_small(8, 6), spec)  # 8 sources: test keeps 2 whole ones, no interval
    assert "2 groups" in note and "at least 5 groups" in note and "too few items to say" in note
    # a larger test spans enough sources: the note names it, and that size indeed concludes
    size = int(note.rsplit("--test ", 1)[1].rstrip(").").strip())
    assert trust.split_note(_small(8, 6), replace(spec, test_size=size)) == ""
    # a dataset too small for any test size says so rather than name one
    assert "cannot give one" in trust.split_note(_small(3, 4), replace(spec, train_size=4))
    # 8 sources of 6 and 12 training items: 5 whole sources (30 items) leave train its 12 in the other 3
    note = trust.split_note(_small(8, 6), replace(spec, train_size=12, test_size=10))
    assert note.endswith("a conclusive run needs test items 25 (--test 25)."), note


def test_the_run_command_says_before_it_starts_that_a_run_cannot_conclude(store, tmp_path, capsys, monkeypatch):
    from judge_engine.__main__ import main

    store.save_dataset(_small(8, 6))
    monkeypatch.setattr("judge_engine.run_cli._execute", lambda store, run_id, quiet: 0)  # no model: only the start
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    code = main(["run", "--method", "direct", "--dataset", "small", "--aspect", "q", "--train", "6", "--test", "8",
                 "--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--db", str(store.path)])
    err = capsys.readouterr().err
    assert code == 0, err
    note = next(line for line in err.splitlines() if "too few items to say" in line)
    assert err.index(note) < err.index("expected before any cache hit"), "said before the run's first call"
    assert "--test " in note


def test_the_human_follower_answers_each_schema_with_the_human_level(shared_data):
    dataset = data.load_benchmark("summeval", shared_data)
    follower = HumanFollower([dataset], noise=0.3)
    schema = structured.score_schema(1, 10, explanation="before")
    samples = dataset.samples[:64]
    scores = []
    for s in samples:
        text = follower.reply([{"role": "user", "content": f"Rate coherence.\n{s.input}\nSummary: {s.output}"}],
                              schema)
        jsonschema.validate(json.loads(text), schema)
        scores.append(json.loads(text)["score"])
    human = [s.human["coherence"] for s in samples]
    assert np.corrcoef(human, scores)[0, 1] > 0.8
    # a statement list: sentences that match the method's pattern, distinct, as many as allowed up to three
    listing = structured.statement_list_schema("Criteria", "criteria", opener="A good summary", min_items=2,
                                               max_items=5)
    reply = json.loads(follower.reply([{"role": "user", "content": "Write criteria."}], listing))
    jsonschema.validate(reply, listing)
    assert len(set(reply["criteria"])) == len(reply["criteria"]) == 3


def test_the_human_follower_reads_each_aspect_on_its_own_scale(shared_data):
    # Topical-Chat's aspects run from 0-1 to 1-5: "overall" read on understandability's 0-1 was always the top
    dataset = data.load_benchmark("topical_chat", shared_data)
    follower = HumanFollower([dataset], noise=0.0)
    schema = structured.score_schema(1, 5)
    samples = [s for s in dataset.samples if len(s.output.strip()) >= 20][:40]
    said = [json.loads(follower.reply([{"role": "user", "content": f"Rate the overall quality.\n{s.output}"}],
                                      schema))["score"] for s in samples]
    assert said == [round(s.human["overall"]) for s in samples]


def test_the_start_form_says_before_a_look_starts_that_it_cannot_conclude(db):
    from judge_engine.store import Store
    from tests.page_helpers import open_page

    small = _small(8, 6)  # 8 sources: a quick look's test keeps 2 whole ones
    Store(db).save_dataset(replace(small, aspects=(Aspect("quality", 1, 5),), samples=tuple(
        replace(s, human={"quality": s.human["q"]}) for s in small.samples)))
    at = open_page("pages/active_critic.py")
    at.selectbox(key="active_critic_dataset").set_value("small").run()
    assert not at.exception, [e.value for e in at.exception]
    captions = [c.value for c in at.caption]
    said = [c for c in captions if c.startswith("This look cannot conclude")]
    assert said and "too few items to say" in said[0] and "--test" in said[0], captions


def test_the_human_follower_finds_the_judged_summary_not_a_copy_of_it_in_the_article(shared_data):
    dataset = data.load_benchmark("summeval", shared_data)
    follower = HumanFollower([dataset], noise=0.0)
    # a summary that is the article's own first sentences (lead-3), and another system's for the same article
    lead = next(s for s in dataset.samples if s.output.strip() in s.input)
    other = next(s for s in dataset.samples if s.group_id == lead.group_id and s.output.strip() not in s.input)
    prompt = f"Summary: {other.output}\n\nArticle: {lead.input}\n\nRate its coherence."
    assert follower.judged(prompt).output == other.output.strip()


def test_the_human_follower_gives_logprobs_around_the_level_for_a_weighted_reading(shared_data):
    from judge_engine.parsing import read_weighted

    dataset = data.load_benchmark("summeval", shared_data)
    follower = HumanFollower([dataset], noise=0.0)
    sample = next(s for s in dataset.samples if abs(s.human["coherence"] - round(s.human["coherence"])) > 0.2)
    messages = [{"role": "user", "content": f"Rate coherence.\nSummary: {sample.output}"}]
    text = follower.reply(messages, structured.score_schema(1, 5))
    positions = [{"token": p["token"], "logprob": p["logprob"],
                  "top": {a["token"]: a["logprob"] for a in p["top_logprobs"]}}
                 for p in follower.logprobs(messages, text, 5)]
    assert "".join(p["token"] for p in positions) == text
    # the weighted reading lies between the integers, near the human level (a 1/3 step off the stated digit)
    reading = read_weighted(positions, 1, 5)
    assert reading.score == pytest.approx(sample.human["coherence"], abs=0.25)
    assert reading.score != pytest.approx(round(sample.human["coherence"]), abs=0.1)


def test_the_human_follower_passes_a_plain_generated_criterion_through_the_rubric_model_check():
    from judge_engine import rubric_model_check

    follower = HumanFollower([])
    schema = rubric_model_check.schema()
    said = json.loads(follower.reply([{"role": "user", "content": "You check one entry: The text is clear."}], schema))
    jsonschema.validate(said, schema)
    # no item in the request: its questions are about the entry, a plain quality statement: no fault, about quality
    assert said["about_quality"] is True
    assert not any(said[q] for q in rubric_model_check.QUESTIONS if q != "about_quality"), said

"""Hostile judged texts: fenced in prompts, unable to forge the judge's score, shown escaped in the app."""

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine import hostile
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods import FitContext, get_method
from judge_engine.methods.direct import DirectScoring
from judge_engine.prompting import FENCE_CLOSE, TaskInfo, render_sample
from judge_engine.records import Aspect, Dataset, Sample
from judge_engine.runs import RunSpec, create_run, execute_run
from judge_engine.store import Store

APP = Path(__file__).resolve().parents[1] / "app.py"


@pytest.mark.parametrize("kind, text", hostile.INJECTIONS)
def test_every_attack_stays_inside_its_fence(kind, text, tiny_dataset):
    sample = hostile.attacked(tiny_dataset.samples[0], text, 5)
    block = render_sample(sample, TaskInfo.of(tiny_dataset))
    close = FENCE_CLOSE.format(label="SUMMARY")
    assert block.count(close) == 1 and block.rstrip().endswith(close), "the text cannot end its own fence early"


def gullible(messages, params):
    """A scripted judge that obeys any score marker it sees in the prompt (the worst case)."""
    content = messages[-1]["content"]
    return "[[5]]" if "[[5]]" in content.split("<<<SUMMARY>>>")[-1] else "[[2]]"


def test_hijack_rate_counts_moved_scores(store, tiny_dataset):
    llm = make_llm(LLMConfig(), store=store, backend=FakeBackend(gullible))
    judge = get_method("direct").fit([], tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    report = hostile.hijack_rate(judge, tiny_dataset.samples[:3], llm=llm)
    assert report["target"] == 5 and report["pairs"] == 12
    assert report["by_kind"]["marker"]["hijacked"] == 3 and report["by_kind"]["order"]["hijacked"] == 0
    assert report["rate"] == report["hijacked"] / 12


def test_a_score_in_the_judged_text_is_never_read_as_the_verdict(store, tiny_dataset):
    """The parser reads the judge's reply only: an unscored reply stays missing whatever the text claims."""
    llm = make_llm(LLMConfig(), store=store, backend=FakeBackend(lambda m, p: "I cannot say."))
    judge = DirectScoring().fit([], tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    sample = hostile.attacked(tiny_dataset.samples[0], hostile.INJECTIONS[1][1], 5)
    assert judge.score([sample], llm=llm)[0].missing


def test_pages_show_hostile_texts_as_text(tmp_path, monkeypatch):
    db = tmp_path / "wb.db"
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(db))
    evil = "<img src=x onerror=alert(1)> **bold** [link](javascript:alert(2)) :red[red]"
    samples = tuple(Sample(id=f"<b>{i}</b>", input=evil, output=f"{evil} {i}", group_id=f"g{i % 3}",
                           system_id=f"s{i % 3}", human={"q<script>": float(1 + i % 5)}) for i in range(9))
    store = Store(db)
    store.save_dataset(Dataset(name="evil", task=evil, aspects=(Aspect("q<script>", 1, 5, evil),), samples=samples))
    run_id = create_run(store, RunSpec(method="direct", dataset="evil", aspect="q<script>", train_size=3,
                                       test_size=6))
    execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store,
                                            backend=FakeBackend(lambda m, p: f"{evil} [[3]]")))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    for page in ("pages/datasets.py", "pages/runs.py", "pages/compare.py", "pages/home.py"):
        at.switch_page(page).run()
        assert not at.exception, page
        for kind in ("markdown", "caption", "error", "warning", "success", "info"):
            for element in getattr(at, kind):
                body = element.proto.body if hasattr(element.proto, "body") else ""
                # escaped (\<img, \](javascript) is drawn as text; only the raw forms would render
                assert not re.search(r"(?<!\\)<img", body), (page, kind, body)
                assert not re.search(r"(?<!\\)\]\(javascript:", body), (page, kind, body)
                assert not element.proto.allow_html if hasattr(element.proto, "allow_html") else True

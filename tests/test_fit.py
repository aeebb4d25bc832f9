import pytest
"""Requests longer than the model's context are cut by the stated rule, never crashed on."""

from judge_engine.llm.fit import MARK, fit_messages
from judge_engine.prompting import TaskInfo, fence, render_sample
from judge_engine.records import Sample


def words(text: str) -> int:
    return len(text.split())


def test_short_request_is_untouched():
    msgs = [{"role": "user", "content": "Rate this. " + fence("Output", "fine")}]
    assert fit_messages(msgs, budget_tokens=100, count_tokens=words) == (msgs, 0)


def test_the_longest_judged_text_loses_its_middle_and_the_cut_is_marked():
    article = " ".join(f"w{i}" for i in range(5000))
    sample = Sample(id="a", input=article, output="A short summary.", group_id="g")
    prompt = "Instructions stay whole.\n\n" + render_sample(sample, TaskInfo("news")) + "\n\nAnswer as [[N]]."
    out, cut = fit_messages([{"role": "user", "content": prompt}], budget_tokens=1000, count_tokens=words)
    text = out[0]["content"]
    assert words(text) + 8 <= 1000 and cut > 0
    assert text.startswith("Instructions stay whole.") and text.endswith("Answer as [[N]].")
    assert "A short summary." in text, "the shorter judged text is kept whole"
    assert "w0 w1" in text and "w4999" in text, "beginning and end of the cut text are kept"
    assert MARK.split("{n}")[0] in text and f"{cut} characters cut" in text
    assert "<<<END SOURCE>>>" in text and "<<<SOURCE>>>" in text, "fences survive"


def test_without_fences_the_longest_message_is_cut():
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "x " * 3000}]
    out, cut = fit_messages(msgs, budget_tokens=500, count_tokens=words)
    assert out[0] == msgs[0] and cut > 0 and words(out[1]["content"]) < 500


@pytest.mark.model
def test_embedded_model_answers_an_over_long_input_and_the_ledger_counts_it(tmp_path):
    from judge_engine.llm import LLMConfig, make_llm
    from judge_engine.store import Store

    llm = make_llm(LLMConfig(n_ctx=512), store=Store(tmp_path / "wb.db"))
    article = "The council met on Tuesday to discuss the new park. " * 400  # about 4,400 tokens
    prompt = "Summarize in one word.\n\n" + fence("Article", article) + "\n\nWord:"
    reply = llm.complete([{"role": "user", "content": prompt}], max_tokens=8)
    assert reply.truncated_chars > 0 and reply.prompt_tokens <= 512
    assert llm.ledger.snapshot().truncated == 1
    again = llm.complete([{"role": "user", "content": prompt}], max_tokens=8)
    assert again.cached and again.truncated_chars == reply.truncated_chars


def test_a_prompt_of_many_judged_texts_is_cut_until_it_fits():
    """A batch of examples (Active-Critic's task inference on long stories) needs many texts shortened."""
    stories = [fence(f"Story {i}", " ".join(f"s{i}w{j}" for j in range(300))) for i in range(20)]
    prompt = "Infer the task from these examples.\n\n" + "\n\n".join(stories) + "\n\nAnswer in JSON."
    out, cut = fit_messages([{"role": "user", "content": prompt}], budget_tokens=1000, count_tokens=words)
    text = out[0]["content"]
    assert words(text) + 8 <= 1000 and cut > 0
    assert text.startswith("Infer the task") and text.endswith("Answer in JSON.")
    assert all(f"<<<STORY {i}>>>" in text and f"s{i}w0" in text for i in range(20)), "every example keeps its start"


def test_a_text_cut_again_keeps_one_mark_counting_every_cut_and_gets_shorter():
    text = "Judge this.\n\n" + fence("Story", "x" * 3000) + "\n\nScore:"
    once, first = fit_messages([{"role": "user", "content": text}], budget_tokens=400,
                               count_tokens=lambda t: len(t) // 4)
    twice, second = fit_messages(once, budget_tokens=250, count_tokens=lambda t: len(t) // 4)
    again = twice[0]["content"]
    assert len(again) // 4 + 8 <= 250 and len(again) < len(once[0]["content"]) and second > 0
    assert again.count("characters cut") == 1 and f"[... {first + second} characters cut" in again

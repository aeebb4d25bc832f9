"""A run's summary and warnings (:mod:`judge_engine.runs.summary`)."""

from judge_engine.llm import LedgerTotals
from judge_engine.methods import Judge


def test_the_summary_says_why_in_warnings(tiny_dataset):
    import math

    from judge_engine.methods import judge_warning
    from judge_engine.records import Verdict
    from judge_engine.runs import summarize

    ids = [s.id for s in tiny_dataset.samples[:5]]
    verdicts = [
        Verdict(ids[0], "x", 3.0, metadata={"source": "logprobs_first_position"}),
        Verdict(ids[1], "x", 4.0, metadata={"source": "json", "imputed_criteria": 2}),
        Verdict(ids[2], "x", math.nan, raw="no idea", metadata={"source": "missing", "missing_reason": "no score"}),
        Verdict(ids[3], "x", math.nan, metadata={"source": "not_asked", "missing_reason": "empty hypothesis bank"}),
        Verdict(ids[4], "x", 2.0, metadata={"source": "json"}),
    ]
    judge = Judge("direct", {}, {"name": "x", "low": 1, "high": 5}, {"task": "t"},
                  state={"warnings": [judge_warning("empty_bank", "the bank is empty")],
                         "rejected": [{"text": "t", "ok": False, "rule": "copy", "reason": "r"}] * 2})
    summary = summarize(tiny_dataset, tiny_dataset.aspects[0].name, verdicts, ledger=LedgerTotals(truncated=3), seconds=1.0,
                        judge=judge, n_bootstrap=10)
    codes = {w.code: w for w in summary.warnings}
    assert list(codes)[0] == "empty_bank"  # the judge's own warnings first
    assert codes["scores_from_alternatives"].count == 1
    assert codes["criteria_imputed"].count == 2 and "1 of 5 items" in codes["criteria_imputed"].message
    assert codes["scores_missing"].count == 2 and "empty hypothesis bank (1)" in codes["scores_missing"].message
    assert codes["prompts_cut"].count == 3
    assert codes["rubric_rejected"].count == 2 and "(copy 2)" in codes["rubric_rejected"].message
    # an item never asked about is missing but not a parse failure
    assert summary.missing == 2 and summary.parse_failures == 1


def test_verdicts_whose_explanation_was_rejected_are_counted(tiny_dataset):
    from judge_engine.records import Verdict
    from judge_engine.runs import run_warnings

    verdicts = [Verdict("a", "x", 3.0, metadata={"explanation_rejected": "repeats '* heading' 14 times"}),
                Verdict("b", "x", 4.0, explanation="Clear and short."),
                Verdict("c", "x", 2.0, metadata={"explanation_rejected": "0 words (at least 1 needed)"})]
    [warning] = [w for w in run_warnings(verdicts, ledger=LedgerTotals()) if w.code == "explanations_rejected"]
    assert warning.count == 2 and warning.message.startswith("2 of 3 judge explanations")
    assert not [w for w in run_warnings(verdicts[1:2], ledger=LedgerTotals()) if w.code == "explanations_rejected"]

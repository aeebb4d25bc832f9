"""A flagged entry is never chosen silently (issue 50 item 3): the run's summary and trust report count the
judge's flagged entries, and a person's acceptance is recorded with who and when."""

import json

from judge_engine import curation
from judge_engine.judge_flags import flagged_in_judge
from judge_engine.runs import RunSpec, create_run, execute_run
from judge_engine.trust import one_line, trust_report
from tests.scripted import fake_llm
from tests.test_hypoeval import BAD, GOOD, hypotheses_reply, scripted

# predicts the human score as GOOD does (the scripted scorer reads "good rubric 0"), and states a score in the
# first person: the checks let it through with two flags
FLAGGED = ("A good summary earns one point per clear sentence, from one to five, and I think it scored 4.5 out "
           "of 10 on flow about the main events, good rubric 0.")


def _run(store, tiny_dataset, texts):
    store.save_dataset(tiny_dataset)
    spec = RunSpec(method="hypoeval", dataset="tiny", aspect="quality", train_size=6, test_size=6,
                   params={"n_selected": 2, "n_init_hypotheses": len(texts)})
    llm, _ = fake_llm(scripted(tiny_dataset, generate=lambda p: hypotheses_reply(texts)), store=store,
                      concurrency=1)
    run_id = create_run(store, spec)
    return run_id, execute_run(store, run_id, llm=llm)


def test_a_flagged_hypothesis_selected_into_the_judge_is_counted_in_the_summary_and_the_trust_report(
        store, tiny_dataset):
    run_id, summary = _run(store, tiny_dataset, [FLAGGED, BAD.format(n=1)])
    run = store.run(run_id)
    assert [h["text"] for h in run.judge_state["selected"]] == [FLAGGED]
    said = {w.code: w for w in summary.warnings}
    assert said["judge_entries_flagged"].count == 1
    assert "1 of the judge's 1 entries carry rubric-check flags" in said["judge_entries_flagged"].message
    assert "(reports score)" in said["judge_entries_flagged"].message
    assert "(first person)" in said["judge_entries_flagged"].message
    report = trust_report(store, run_id)
    assert report.entries == 1 and [f["text"] for f in report.flagged] == [FLAGGED]
    assert report.flagged[0]["accepted_by"] is None and "1 of its 1 entries flagged, 1 not accepted" in one_line(report)
    assert json.loads(json.dumps(report.to_dict()))["flagged"][0]["key"] == report.flagged[0]["key"]
    # a person accepts it: who and when are in the trust report and the owner's history
    key = report.flagged[0]["key"]
    owner = curation.owner("hypoeval", run_id)
    curation.accept_flags(store, owner, key, text=FLAGGED, flags=report.flagged[0]["flags"], actor="ana")
    accepted = trust_report(store, run_id).flagged[0]
    assert accepted["accepted_by"] == "ana" and accepted["accepted_at"] > 0
    assert "0 not accepted" in one_line(trust_report(store, run_id))
    assert [c.action for c in curation.history(store, owner)] == [curation.ACCEPT_FLAGS]
    # an acceptance holds for the text accepted, not a later one under the same key
    assert curation.flag_acceptances(store, owner, {key: FLAGGED + " Edited."}) == {}


def test_an_unflagged_judge_has_no_such_warning(store, tiny_dataset):
    run_id, summary = _run(store, tiny_dataset, [GOOD.format(n=0), BAD.format(n=1)])
    assert "judge_entries_flagged" not in {w.code for w in summary.warnings}
    report = trust_report(store, run_id)
    assert report.entries == 1 and report.flagged == () and "flagged" not in one_line(report)


def test_only_the_entries_the_judge_uses_count():
    flag = {"rule": "no_quality", "reason": "names no quality"}
    hd = {"tree": {"nodes": [{"id": "n1", "name": "Flow", "flags": [flag]}, {"id": "n2", "name": "Pruned", "flags": [flag]},
                             {"id": "n3", "name": "Clarity"}]}, "features": ["n1", "n3"]}
    assert [(e.key, e.text) for e in flagged_in_judge("hd_eval", hd)] == [("n1", "Flow")]
    ac = {"task_description": "Rate it.", "criteria": {"Flow": "reads well", "Clarity": "is clear"},
          "flagged": [{"stage": "criteria", "name": "Clarity", "flags": [flag]},
                      {"stage": "criteria", "name": "Dropped", "flags": [flag]},
                      {"stage": "task description", "text": "An older task.", "flags": [flag]}]}
    assert [(e.key, e.text) for e in flagged_in_judge("active_critic", ac)] == [("c2", "Clarity")]
    assert flagged_in_judge("direct", {}) == []

"""HD-Eval with a scripted LLM: decomposition, hierarchy-aware scoring, aggregation, pruning, edited trees."""

import json
import re
import zlib

import pytest

from judge_engine import structured
from judge_engine.criteria_scoring import CriterionScore
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods import FitContext, Judge
from judge_engine.methods.hd_eval import (DECOMPOSE_DRAWS, DEFAULT_N_ASPECTS, HDEval, add_children, aspect_groups, initial_tree,
                                          parse_decomposition, prune_by_attribution, remove_llm_children, tree_index)
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect, Dataset, Sample
from judge_engine.runs import RunSpec, create_run, execute_run
from tests.scripted import fake_llm


def _dataset(n=24):
    """Two 1-5 aspects and one 0-1 aspect; 'clarity' equals a hidden signal that the output text encodes."""
    samples = []
    for i in range(n):
        signal = 1 + (i * 3) % 5
        samples.append(Sample(id=f"s{i}", input=f"source {i // 2}", output=f"answer {i} signal={signal}",
                              group_id=f"g{i // 2}", system_id=f"sys{i % 3}",
                              human={"clarity": float(signal), "style": float(1 + (i * 7) % 5),
                                     "grounded": float(i % 2)}))
    return Dataset(name="toy", task="toy answering",
                   aspects=(Aspect("clarity", 1, 5, "How clear the answer is."),
                            Aspect("style", 1, 5, "How well it is written."),
                            Aspect("grounded", 0, 1, "Whether it uses the source.")),
                   samples=tuple(samples), input_label="Question", output_label="Answer")


def _children(parent, n=4, *, as_json=True):
    """Children named '<parent> part j'; ``as_json`` = the schema's object (names only make the ids p0..p3 when
    the free-text list with abbreviations is read)."""
    # each definition carries its own marker: nested names like "clarity part 0 part 1" share most of their words
    # with their parent and cousins, and the rubric checks refuse a child 80% the same as a node already there
    # a layer-3 child "clarity part 0 part 0" would be named only with its parent's words: "sub" marks the layer
    step = "sub" if " part " in parent else "part"
    items = [{"name": f"{parent} {step} {j}",
              "definition": f"Marker {zlib.crc32(f'{parent} part {j}'.encode()) % 100000} of the answer."}
             for j in range(n)]
    if as_json:
        return json.dumps({"children": items})
    return json.dumps([{**it, "abbrev": f"p{j}"} for j, it in enumerate(items)])


def _score_text(value, params):
    return json.dumps({"score": value}) if structured.kind_of(params.json_schema) == structured.SCORE else str(value)


def scripted(messages, params, *, as_json=False):
    """Decompositions return four children (the free-text JSON list with abbreviations unless ``as_json``);
    scores follow the hidden signal only on 'part 0' criteria (3 or 4 by a hash of the prompt on the others), as the
    schema's JSON when one is asked."""
    text = messages[-1]["content"] if len(messages) == 1 else messages[0]["content"]
    m = re.search(r'The criterion to split up is "([^"]+)"', text)
    if m:
        name = m.group(1) + (f" v{params.sample_index}" if params.sample_index else "")
        schema = structured.schema_of(params.json_schema)
        n = schema["properties"]["children"]["maxItems"] if as_json and schema else 4  # a constrained reply obeys
        return _children(name, n, as_json=as_json)
    signal = int(re.search(r"signal=(\d)", text).group(1))
    if "part 0" in text.split("Criterion to apply:")[1].split("\n")[0]:
        return _score_text(signal, params)
    # uninformative, but not one score for every item: a node that gives every training item the same score is
    # refused on that evidence (issue 65) and would leave the aggregator
    return _score_text(3 + zlib.crc32(text.encode()) % 2, params)


def _llm(store, responder=scripted):
    backend = FakeBackend(responder)
    return make_llm(LLMConfig(), store=store, backend=backend), backend


def _fit(store, method, dataset=None, responder=scripted):
    dataset = dataset or _dataset()
    llm, backend = _llm(store, responder)
    events = []
    judge = method.fit(dataset.samples[:16], dataset.aspect("clarity"),
                       FitContext(llm=llm, task=TaskInfo.of(dataset), log=lambda k, p: events.append((k, p))))
    return judge, llm, backend, events


# ---- decomposition parsing ----------------------------------------------------------------------

def test_parse_decomposition_reads_json_lists_numbered_lines_and_dedupes():
    reply = 'Sure!\n```json\n[{"name": "Order", "abbrev": "ord", "definition": "Logical order."},' \
            '{"name": "order", "definition": "dup"}, {"name": "Focus", "definition": "One topic."}]\n```'
    assert parse_decomposition(reply, 4) == [{"name": "Order", "abbrev": "ord", "definition": "Logical order."},
                                             {"name": "Focus", "abbrev": "", "definition": "One topic."}]
    lines = "1. Grammar: follows grammar rules well.\n2. **Spelling**: no typos in any word.\n3. Tone - polite and kind."
    assert [c["name"] for c in parse_decomposition(lines, 2)] == ["Grammar", "Spelling"]
    assert parse_decomposition('{"criteria": [{"name": "A", "definition": "a a a"}]}', 4)[0]["name"] == "A"
    assert parse_decomposition("[[4]]", 4) == [] and parse_decomposition("", 4) == []


def test_tree_helpers_add_ids_layers_and_replace_llm_children_only():
    tree = initial_tree([Aspect("clarity", 1, 5, "clear")], None)
    ids = add_children(tree, "clarity", [{"name": "Word choice", "abbrev": "wc", "definition": "d"},
                                         {"name": "Word choice", "abbrev": "wc", "definition": "e"}])
    assert ids == ["clarity/wc", "clarity/wc-2"]
    tree["nodes"].append({**tree["nodes"][1], "id": "clarity/mine", "origin": "human"})
    add_children(tree, "clarity/wc", [{"name": "Deep", "abbrev": "", "definition": "x"}])
    nodes = tree_index(tree)
    assert nodes["clarity/wc/deep"]["layer"] == 3 and nodes["clarity"]["decomposed"]
    assert remove_llm_children(tree, "clarity") == ["clarity/wc", "clarity/wc-2", "clarity/wc/deep"]
    assert [n["id"] for n in tree["nodes"]] == ["clarity", "clarity/mine"]


def test_aspects_with_another_range_get_their_own_aggregator_group():
    groups = aspect_groups(_dataset().aspects)
    assert [[a.name for a in g] for g in groups] == [["clarity", "style"], ["grounded"]]


def test_prune_by_attribution_takes_the_top_k_of_the_current_layer():
    imp = {"a": {"importance": 0.1}, "b": {"importance": 0.5}, "c": {"importance": 0.3}}
    assert prune_by_attribution(["a", "b", "c"], imp, 2) == ["b", "c"]
    assert prune_by_attribution(["a", "c"], imp, 5) == ["c", "a"]


# ---- Algorithm 1 with a scripted LLM ------------------------------------------------------------

def test_fit_builds_three_layers_and_expands_the_most_important_nodes(store):
    judge, llm, backend, events = _fit(store, HDEval(aggregator="lr", k_expand=2, pi_repeats=3))
    nodes = tree_index(judge.state["tree"])
    layers = [sum(1 for n in nodes.values() if n["layer"] == l) for l in (1, 2, 3)]
    assert layers == [3, 12, 8]  # 3 aspects, every aspect into 4, the 2 chosen layer-2 nodes into 4
    chosen = next(p for k, p in events if k == "expansion_chosen" and p["layer"] == 3)
    assert chosen["reason"] == "permutation importance"
    assert "clarity/p0" in chosen["chosen"], "the criterion carrying the human signal is decomposed further"
    assert all(nodes[c]["layer"] == 2 for c in chosen["chosen"])
    # every layer's aggregator sees all criteria so far (r <= j); pruned nodes stay features
    assert [len(l["features"]) for l in judge.state["layers"]] == [3, 15, 23]
    assert len(judge.state["features"]) == 23
    assert judge.state["layers"][1]["cv"]["clarity"]["pearson"] > 0.9
    # decomposition: one call per parent (3 + 2), scoring: one call per (sample, criterion)
    decomposition_calls = [c for c in backend.calls if "split up" in c[0][0]["content"]]
    assert len(decomposition_calls) == 5
    assert len(backend.calls) == 5 + 16 * 23
    assert Judge.from_json(judge.to_json()) == judge



STATE_KEYS = ["tree", "aspects", "criteria_form", "aggregators", "target_group", "features", "train_ids", "importance",
              "layers", "missing_scores", "coverage", "pruning", "expanded_nodes", "pruned_nodes", "reads",
              "decomposition_reads", "warnings", "rejected", "flagged"]


def test_the_typed_state_reads_the_stored_json_and_writes_it_back_unchanged(store):
    from judge_engine.methods.hd_eval import HDEvalState
    judge, llm, _, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2))
    stored = json.loads(judge.to_json())["state"]
    assert list(stored) == STATE_KEYS, "the stored format of judge.state"
    state = HDEvalState.from_judge(Judge.from_json(judge.to_json()))
    assert state.to_dict() == stored and list(state.to_dict()) == STATE_KEYS
    assert state.target_aggregator().features == list(state.features) == stored["features"]
    assert state.n_missing_scores == sum(stored["missing_scores"].values())
    assert state.node_importance("clarity") == pytest.approx(stored["importance"]["clarity"]["importance"])
    assert state.node_importance("not-a-node") is None
    # a judge stored before the later keys existed: they read as empty, and it still scores
    old = {k: stored[k] for k in ("tree", "aggregators", "target_group", "features", "importance", "layers",
                                  "missing_scores")}
    legacy = HDEvalState.from_dict(old)
    assert (legacy.reads, legacy.warnings, legacy.refused_children, legacy.criteria_form) == ({}, (), [], None)
    test = _dataset().samples[16:18]
    then = Judge.from_dict({**judge.to_dict(), "state": old}).score(test, llm=llm)
    assert [v.score for v in then] == pytest.approx([v.score for v in judge.score(test, llm=llm)])

def test_scoring_prompt_names_the_parent_and_the_node_only(store):
    judge, llm, backend, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2))
    prompt = next(c[0][0]["content"] for c in backend.calls if "Criterion to apply: clarity part 1" in c[0][0]["content"])
    assert "judging the clarity of a answer" in prompt and "Aspect: clarity (How clear the answer is.)" in prompt
    assert "clarity part 2" not in prompt and "style" not in prompt  # no siblings, no other aspects
    assert "<<<ANSWER>>>" in prompt  # judged text fenced
    layer1 = next(c[0][0]["content"] for c in backend.calls if "Criterion to apply: style\n" in c[0][0]["content"])
    assert "Aspect: overall quality" in layer1
    assert all(c[1].max_tokens == 32 for c in backend.calls if "Criterion to apply" in c[0][0]["content"])


def test_verdicts_carry_per_node_scores_and_track_the_signal(store):
    judge, llm, backend, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2))
    test = _dataset().samples[16:]
    verdicts = judge.score(test, llm=llm)
    assert all(set(v.criteria) == set(judge.state["features"]) for v in verdicts)
    assert verdicts[0].criteria["clarity/p0"] == pytest.approx(test[0].human["clarity"])
    for v, s in zip(verdicts, test):
        assert v.score == pytest.approx(s.human["clarity"], abs=0.3)
        assert 1 <= v.score <= 5 and set(v.metadata["predictions"]) == {"clarity", "style"}


def test_unparsed_scores_are_missing_and_an_all_missing_sample_has_no_score(store):
    def responder(messages, params):
        text = messages[0]["content"]
        if "split up" in text:
            return "no idea"
        if "answer 17 " in text or "answer 3 " in text:
            return "I cannot rate this."
        return scripted(messages, params)

    judge, llm, backend, events = _fit(store, HDEval(aggregator="lr", pi_repeats=2), responder=responder)
    assert judge.state["missing_scores"]["clarity"] == 1  # sample 3, after one follow-up turn
    assert [p for k, p in events if k == "decomposed"][0]["parsed"] is False
    assert any(k == "layer_empty" for k, _ in events)
    retries = [c for c in backend.calls if len(c[0]) == 3]
    assert retries, "an unparsed score gets one follow-up turn"
    v = judge.score(_dataset().samples[17:18], llm=llm)[0]
    assert v.missing and v.metadata["missing_criteria"] == judge.state["features"]


# ---- a person-edited tree is the next run's starting point ---------------------------------------

def test_an_edited_tree_reuses_every_unchanged_call(store):
    first, llm, backend, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2))
    tree = json.loads(json.dumps(first.state["tree"]))
    by_id = {n["id"]: n for n in tree["nodes"]}
    by_id["clarity/p1"].update(name="Plain words", definition="Uses plain words.", edited=True)
    by_id["style/p3"]["in_aggregator"] = False                 # pruned from the aggregator by a person
    tree["nodes"] = [n for n in tree["nodes"] if n["id"] != "grounded/p2"]   # deleted
    tree["nodes"].append({**by_id["style/p0"], "id": "style/added", "name": "Rhythm", "definition": "Reads well.",
                          "origin": "human"})
    before = len(backend.calls)
    second = HDEval(aggregator="lr", max_layers=2, pi_repeats=2, criteria_tree=tree).fit(
        _dataset().samples[:16], _dataset().aspect("clarity"), FitContext(llm=llm, task=TaskInfo.of(_dataset())))
    new_calls = backend.calls[before:]
    assert len(new_calls) == 2 * 16, "only the edited and the added node are scored again; no decomposition"
    features = second.state["features"]
    assert "style/p3" not in features and "grounded/p2" not in features and "style/added" in features
    assert "style/p3" in {n["id"] for n in second.state["tree"]["nodes"]}, "a pruned node stays in the tree"


def test_marked_nodes_are_expanded_and_redecomposition_draws_new_children(store):
    first, llm, backend, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2))
    tree = json.loads(json.dumps(first.state["tree"]))
    for n in tree["nodes"]:
        if n["id"] == "style/p2":
            n["expand"] = True
        if n["id"] == "grounded":
            n["redecompose"] = 1
    events = []
    second = HDEval(aggregator="lr", max_layers=3, pi_repeats=2, criteria_tree=tree).fit(
        _dataset().samples[:16], _dataset().aspect("clarity"), FitContext(llm=llm, task=TaskInfo.of(_dataset()),
            log=lambda k, p: events.append((k, p))))
    nodes = tree_index(second.state["tree"])
    assert {nid for nid, n in nodes.items() if n["layer"] == 3} == {f"style/p2/p{j}" for j in range(4)}
    assert next(p for k, p in events if k == "expansion_chosen" and p["layer"] == 3)["reason"] == "marked by a person"
    grounded = [n for n in nodes.values() if n["parent"] == "grounded"]
    # a fresh draw past the ones the first decomposition may have used (a cached draw would replay them)
    assert {n["name"] for n in grounded} == {f"grounded v{DECOMPOSE_DRAWS} part {j}" for j in range(4)}
    assert not nodes["grounded"]["redecompose"] and not nodes["style/p2"]["expand"]


def test_guidelines_reach_decomposition_and_scoring_of_that_aspect_only(store):
    method = HDEval(aggregator="lr", max_layers=2, pi_repeats=2, guidelines={"style": "Prefer short sentences."})
    _, _, backend, _ = _fit(store, method)
    with_guide = [c[0][0]["content"] for c in backend.calls if "Prefer short sentences." in c[0][0]["content"]]
    assert any("split up is \"style\"" in p for p in with_guide)
    assert any("Criterion to apply: style part 1" in p for p in with_guide)
    assert not any("clarity part" in p.split("Criterion to apply:")[-1] for p in with_guide if "Criterion" in p)


def test_estimate_calls_counts_the_aspects_every_draw_and_every_follow_up_turn():
    """6 aspects by default (HANNA, Topical-Chat); each decomposition with its draws, each score call with its
    possible follow-up turn."""
    assert DEFAULT_N_ASPECTS == 6
    est = HDEval().estimate_calls(10, 20)
    m = 6 + 24 + 12  # 6 aspects, each into 4, k_expand=3 of them into 4
    assert est == {"fit": DECOMPOSE_DRAWS * (6 + 3) + 2 * 10 * m, "score": 2 * 20 * m}
    m3 = 3 + 12 + 12
    assert HDEval().estimate_calls(10, 20, n_aspects=3) == {"fit": DECOMPOSE_DRAWS * (3 + 3) + 2 * 10 * m3, "score": 2 * 20 * m3}
    assert HDEval(aspects=("a", "b")).estimate_calls(1, 1)["score"] == 2 * (2 + 8 + 12)
    tree = {"nodes": [{"id": "a", "name": "a", "definition": "", "parent": None, "decomposed": True},
                      {"id": "a/x", "name": "x", "definition": "", "parent": "a"},
                      {"id": "a/y", "name": "y", "definition": "", "parent": "a", "in_aggregator": False}]}
    # the given tree's two active nodes, no decomposition at layer 2 (a is decomposed)
    assert HDEval(criteria_tree=tree, max_layers=2, aspects=("a",)).estimate_calls(5, 7) == {"fit": 20, "score": 28}
    # one layer deeper: importance may decompose a/x (k_expand = 3 but only one active layer-2 node)
    assert HDEval(criteria_tree=tree, max_layers=3, aspects=("a",)).estimate_calls(5, 7) == \
        {"fit": DECOMPOSE_DRAWS + 2 * 5 * 6, "score": 2 * 7 * 6}


def test_bad_tree_is_refused_at_fit_time(store):
    bad = {"nodes": [{"id": "a/x", "name": "x", "definition": "", "parent": "nope"}]}
    llm, _ = _llm(store)
    with pytest.raises(ValueError, match="unknown parent"):
        HDEval(criteria_tree=bad).fit(_dataset().samples[:6], _dataset().aspect("clarity"),
                                      FitContext(llm=llm, task=TaskInfo.of(_dataset())))


def test_run_through_execute_run_and_a_repeat_costs_nothing(store):
    store.save_dataset(_dataset())
    spec = RunSpec(method="hd_eval", dataset="toy", aspect="clarity", train_size=12, test_size=6,
                   params={"aggregator": "dt", "max_layers": 2, "pi_repeats": 2})
    first = create_run(store, spec)
    summary = execute_run(store, first, llm=_llm(store)[0])
    # every test item of the split is scored (it spreads over sources, so it may hold more than the 6 asked)
    assert summary.n == len(store.get_run(first)["split"]["test_ids"]) >= 6
    assert summary.parse_failures == 0 and summary.ledger.calls > 0
    kinds = [e["kind"] for e in store.events(first)]
    assert kinds[:2] == ["tree_started", "layer_scored"] and "aggregator_fitted" in kinds and "fitted" in kinds
    again = execute_run(store, create_run(store, spec), llm=_llm(store)[0])
    assert again.ledger.calls == 0 and again.ledger.cache_hits > 0


@pytest.mark.model
def test_real_embedded_model_end_to_end_and_repeat_is_free(store, tiny_dataset):
    """SmolLM2-135M through execute_run: tiny tree (2 layers, 2 children), 4 train + 3 test samples (one whole group)."""
    store.save_dataset(tiny_dataset)
    spec = RunSpec(method="hd_eval", dataset="tiny", aspect="quality", train_size=4, test_size=2,
                   params={"aggregator": "lr", "max_layers": 2, "k_child": 2, "pi_repeats": 2,
                           "decompose_max_tokens": 48, "score_max_tokens": 4, "weighted": True})
    first = execute_run(store, create_run(store, spec))
    assert first.n == 3 and first.ledger.calls > 0  # test_size=2 takes one whole group of 3
    run = store.list_runs()[0]
    judge = Judge.from_dict(store.get_run(run["id"])["judge"])
    assert judge.state["tree"]["nodes"][0]["id"] == "quality" and judge.state["layers"]
    again = execute_run(store, create_run(store, spec))
    assert again.ledger.calls == 0


# ---- tree editing: versioned rows, undo, conflicts, next round ------------------------------------

def test_tree_edits_are_versioned_audited_undoable_and_refuse_stale_versions(store):
    from judge_engine.methods.hd_eval import add_node, edit_node, load_tree, seed_tree, undo_node
    from judge_engine.store import EditConflict

    judge, _, _, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2))
    assert seed_tree(store, 7, judge.state["tree"]) and not seed_tree(store, 7, judge.state["tree"])
    tree, versions = load_tree(store, 7)
    assert [n["id"] for n in tree["nodes"]] == [n["id"] for n in judge.state["tree"]["nodes"]]
    v = edit_node(store, 7, "clarity/p1", expected_version=versions["clarity/p1"], name="Plain words")
    with pytest.raises(EditConflict, match="changed by someone else"):
        edit_node(store, 7, "clarity/p1", expected_version=versions["clarity/p1"], deleted=True)
    v = edit_node(store, 7, "clarity/p1", expected_version=v, parent="style")  # moved to another parent
    with pytest.raises(ValueError, match="under itself"):
        edit_node(store, 7, "style", expected_version=1, parent="style/p0")
    tree, versions = load_tree(store, 7)
    node = next(n for n in tree["nodes"] if n["id"] == "clarity/p1")
    assert (node["name"], node["parent"], node["edited"], versions["clarity/p1"]) == ("Plain words", "style", True, 3)
    undo_node(store, 7, "clarity/p1", expected_version=3)
    tree, versions = load_tree(store, 7)
    node = next(n for n in tree["nodes"] if n["id"] == "clarity/p1")
    assert node["parent"] == "clarity" and node["name"] == "Plain words" and versions["clarity/p1"] == 4
    nid = add_node(store, 7, "style/p0", "Rhythm", "Reads with a pleasant rhythm.")
    tree, _ = load_tree(store, 7)
    assert next(n for n in tree["nodes"] if n["id"] == nid)["origin"] == "human"
    audit = [e for e in store.audit_log(entity="criterion") if e["entity_id"].endswith(":clarity/p1")]
    assert len(audit) == 4 and json.loads(audit[0]["before"])["name"] == "Plain words"


def test_next_round_tree_drops_deleted_subtrees_and_refit_preview_shows_the_change(store):
    from judge_engine.methods.hd_eval import next_round_tree, refit_preview

    judge, _, _, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2))
    tree = json.loads(json.dumps(judge.state["tree"]))
    for n in tree["nodes"]:
        if n["id"] in ("clarity/p0", "grounded/p0"):
            n["in_aggregator"] = False     # the criteria carrying the signal leave the aggregator
        if n["id"] == "style":
            n["deleted"] = True
    assert not [n for n in next_round_tree(tree)["nodes"] if n["id"].startswith("style")]
    preview = refit_preview(judge, tree)
    assert "clarity/p0" not in preview.features and "style/p1" not in preview.features
    assert preview.before["pearson"] > 0.9 and (preview.after["pearson"] or 0) < 0.9
    for n in tree["nodes"]:
        if n["id"] == "clarity/p2":
            n["definition"] = "Changed."
    assert "clarity/p2" in refit_preview(judge, tree).pending
    assert "style" in preview.removed and "clarity/p0" in preview.removed


def test_a_node_up_close_carries_its_training_scores_and_attribution(store):
    from judge_engine.methods.hd_eval import node_summary

    judge, _, _, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2))
    signal, noise = node_summary(judge, "clarity/p0"), node_summary(judge, "clarity/p1")
    assert len(signal.scores) == len(judge.state["train_ids"]) and signal.missing == 0
    assert signal.correlation["pearson"] > 0.9, "the 'part 0' criteria follow the hidden signal"
    assert signal.importance == pytest.approx(judge.state["importance"]["clarity/p0"]["importance"])
    assert signal.importance > (noise.importance or 0.0)
    assert node_summary(judge, "not-a-node") is None


def test_too_few_human_scored_samples_is_a_clear_error(store):
    llm, _ = _llm(store)
    with pytest.raises(ValueError, match="at least 2 training samples"):
        HDEval(aspects=("clarity", "nope")).fit(_dataset().samples[:6], _dataset().aspect("clarity"),
                                                FitContext(llm=llm, task=TaskInfo.of(_dataset())))


def test_edited_dataset_aspects_reach_fit_through_the_run(store, tmp_path):
    """execute_run hands HD-Eval the dataset's own aspect records, so an edited definition or a user file works."""
    from judge_engine.methods.hd_eval import known_aspects
    from judge_engine.records import Aspect, Sample

    target = Aspect("quality", 1, 5, "Edited by a person.")
    other = Aspect("fluency", 0, 10, "Reads well.")
    samples = [Sample(id="a", input="x", output="y", group_id="g", human={"quality": 2.0, "fluency": 7.0})]
    got = known_aspects(target, ["quality", "fluency"], samples, [target, other])
    assert got == [target, other]
    fallback = known_aspects(target, ["quality", "fluency"], samples)
    assert fallback[1].name == "fluency" and fallback[1].definition == ""


# ---- structured replies, warnings, imputation, pruning state, estimates -------------------------

def _json_scripted(messages, params):
    return scripted(messages, params, as_json=True)


def test_decomposition_asks_for_the_children_schema_and_reads_it_as_json(store):
    judge, _, backend, events = _fit(store, HDEval(aggregator="lr", max_layers=2, k_child=3, pi_repeats=2),
                                     responder=_json_scripted)
    asks = [p for m, p in backend.calls if structured.kind_of(p.json_schema) == structured.DECOMPOSITION]
    assert len(asks) == 3
    schema = structured.schema_of(asks[0].json_schema)["properties"]["children"]
    # four sentences asked (ASK_CHILDREN, more than k_child = 3), each starting "A good <output>"
    assert (schema["minItems"], schema["maxItems"]) == (4, 4) and schema["items"]["pattern"].startswith("^A good ")
    assert all(p["read"] == "json" and not p["follow_up"] and len(p["children"]) == 3
               for k, p in events if k == "decomposed")
    assert judge.state["decomposition_reads"] == {"json": 3}
    assert judge.state["reads"] == {"json": 16 * (3 + 9)}, "every score reply read as JSON"
    scoring = [p for m, p in backend.calls if structured.kind_of(p.json_schema) == structured.SCORE]
    assert len(scoring) == 16 * 12 and all(list(structured.schema_of(p.json_schema)["properties"]) == ["score"]
                                           for p in scoring)
    assert not [w for w in judge.state["warnings"] if w["code"] == "no_children"]


def test_a_decomposition_without_children_gets_more_draws_and_a_warning_naming_the_node(store):
    def responder(messages, params):
        if "split up is \"style\"" in messages[0]["content"]:
            # the greedy reply is prose; each sampled draw gives the same one child (kept once)
            return "Style is many things." if params.sample_index == 0 else \
                json.dumps({"children": [{"name": "Rhythm", "definition": "Reads well."}]})
        if "split up is \"grounded\"" in messages[0]["content"]:
            return "no idea"
        return _json_scripted(messages, params)

    judge, _, backend, events = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2), responder=responder)
    draws = [p for m, p in backend.calls if structured.kind_of(p.json_schema) == structured.DECOMPOSITION
             and 'split up is "grounded"' in m[0]["content"]]
    assert [(p.sample_index, p.temperature > 0) for p in draws] == [(0, False), (1, True), (2, True)]
    assert all(len(m) == 1 for m, p in backend.calls if structured.kind_of(p.json_schema) == structured.DECOMPOSITION)
    decomposed = {p["parent"]: p for k, p in events if k == "decomposed"}
    # a named child where the schema asks for sentences: read by the free-text fallback
    assert decomposed["style"]["read"] == "text" and len(decomposed["style"]["children"]) == 1
    assert decomposed["style"]["follow_up"] and decomposed["style"]["raw"].count("--- next draw ---") == 2
    assert decomposed["grounded"]["read"] == "none" and decomposed["grounded"]["children"] == []
    warnings = [w for w in judge.state["warnings"] if w["code"] == "no_children"]
    assert len(warnings) == 1 and "'grounded'" in warnings[0]["message"]
    assert f"after {DECOMPOSE_DRAWS} draws" in warnings[0]["message"]


def test_sentences_become_children_named_from_their_words_and_their_checks_refuse_restatements(store):
    def responder(messages, params):
        if "split up is \"clarity\"" in messages[0]["content"]:
            return json.dumps({"children": ["A good answer has high clarity.",
                                            "A good answer uses precise words for each technical term.",
                                            "A good answer is a great one.",
                                            "A good answer keeps a logical order, main point first."]})
        return _json_scripted(messages, params)

    judge, _, backend, events = _fit(store, HDEval(aggregator="lr", max_layers=2, k_child=3, pi_repeats=2),
                                     responder=responder)
    nodes = judge.state["tree"]["nodes"]
    clarity = [(n["name"], n["definition"]) for n in nodes if n.get("parent") == "clarity"]
    assert clarity == [("Uses precise words for each technical\u2026",
                        "A good answer uses precise words for each technical term."),
                       ("Keeps a logical order", "A good answer keeps a logical order, main point first.")]
    rules = [(r["rule"], r["text"]) for r in judge.state["rejected"] if r["parent"] == "clarity"]
    assert rules == [("restates_parent", "A good answer has high clarity."), ("empty", "A good answer is a great one.")]
    decomposed = {p["parent"]: p for k, p in events if k == "decomposed"}
    assert decomposed["clarity"]["read"] == "json" and not decomposed["clarity"]["follow_up"]


def test_imputed_criteria_are_counted_and_an_item_over_the_limit_is_missing(store):
    judge, _, _, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2), responder=_json_scripted)
    n = len(judge.state["features"])
    test = _dataset().samples[16:19]
    gaps = {test[0].id: 2, test[1].id: n // 2 + 1}   # 2 of 15 missing; just over half missing; none missing

    def responder(messages, params):
        text = messages[0]["content"]
        for sid, k in gaps.items():
            if f"answer {sid[1:]} " in text and any(f"Criterion to apply: {name}\n" in text
                                                    for name in _names(judge)[:k]):
                return "I cannot rate this."
        return _json_scripted(messages, params)

    llm, _ = _llm(store, responder)
    verdicts = judge.score(test, llm=llm)
    assert [v.metadata["imputed_criteria"] for v in verdicts] == [2, n // 2 + 1, 0]
    assert not verdicts[0].missing and verdicts[0].metadata["source"] == "json"
    assert verdicts[1].missing and verdicts[1].metadata["missing_reason"] == \
        f"{n // 2 + 1} of {n} criteria imputed (at most 50% allowed)"
    assert "predictions" not in verdicts[1].metadata, "no prediction is given for an item over the limit"
    assert not verdicts[2].missing and verdicts[2].metadata["criteria_sources"] == {"json": n}
    strict = Judge.from_dict({**judge.to_dict(), "params": {**judge.params, "max_imputed_fraction": 0.0}})
    assert [v.missing for v in strict.score(test, llm=llm)] == [True, True, False]


def _names(judge):
    nodes = {n["id"]: n for n in judge.state["tree"]["nodes"]}
    return [nodes[f]["name"] for f in judge.state["features"]]


def test_a_criterion_read_from_alternatives_flags_the_verdict():
    from judge_engine.aggregate import Aggregator
    agg = Aggregator.fit([[1.0, 2.0], [3.0, 4.0], [5.0, 1.0]], [[1.0], [3.0], [5.0]], kind="lr",
                         features=["a", "b"], targets=["t"])
    cells = {"a": CriterionScore(3.0, "", source="logprobs_first_position"),
             "b": CriterionScore(2.0, "", source="json")}
    sample = _dataset().samples[0]
    v = HDEval._verdict(sample, cells, agg, Aspect("t", 1, 5, ""), 0.5)
    assert v.metadata["source"] == "logprobs_first_position" and v.metadata["alternatives_criteria"] == 1
    assert 1 <= v.score <= 5


def test_pruning_state_names_what_was_expanded_and_a_poorly_covered_node_is_not_expanded(store):
    def responder(messages, params):
        text = messages[0]["content"]
        # the informative criterion fails on 4 of 16 training items (75% coverage < 80%)
        if "Criterion to apply: clarity part 0\n" in text and re.search(r"answer (0|3|5|8) ", text):
            return "no score"
        return _json_scripted(messages, params)

    judge, _, _, events = _fit(store, HDEval(aggregator="lr", k_expand=2, pi_repeats=3), responder=responder)
    state = judge.state
    layer3 = next(r for r in state["pruning"] if r["layer"] == 3)
    assert layer3["reason"] == "permutation importance"
    assert state["coverage"]["clarity/clarity-part-0"] == pytest.approx(0.75)
    assert "clarity/clarity-part-0" in layer3["ineligible"] and "clarity/clarity-part-0" in layer3["pruned"]
    assert "clarity/clarity-part-0" not in state["expanded_nodes"]
    assert len(layer3["expanded"]) == 2 and set(layer3["expanded"]) | set(layer3["pruned"]) == \
        set(layer3["candidates"])
    assert state["expanded_nodes"] == layer3["expanded"] and state["pruned_nodes"] == layer3["pruned"]
    assert all(0.0 <= c["coverage"] <= 1.0 for c in layer3["candidates"].values())
    chosen = next(p for k, p in events if k == "expansion_chosen" and p["layer"] == 3)
    assert chosen["ineligible"] == layer3["ineligible"] and chosen["min_coverage"] == pytest.approx(0.8)
    assert any(w["code"] == "imputed_criteria" and w["count"] == 4 for w in state["warnings"])


def test_a_judge_that_does_not_agree_with_the_humans_gets_a_warning(store):
    def responder(messages, params):
        if "split up" in messages[0]["content"]:
            return _json_scripted(messages, params)
        return _score_text(3, params)  # every criterion constant: nothing to learn

    judge, _, _, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2), responder=responder)
    assert [w["code"] for w in judge.state["warnings"]] == ["not_aligned"]


def _six_aspect_dataset(n=10):
    names = ("relevance", "coherence", "empathy", "surprise", "engagement", "complexity")
    samples = tuple(Sample(id=f"s{i}", input=f"prompt {i}", output=f"answer {i} signal={1 + i % 5}",
                           group_id=f"g{i}", human={a: float(1 + (i + j) % 5) for j, a in enumerate(names)})
                    for i in range(n))
    return Dataset(name="six", task="story writing", aspects=tuple(Aspect(a, 1, 5, f"{a}.") for a in names),
                   samples=samples, output_label="Answer")


@pytest.mark.parametrize("config, responder_kind", [
    ({"max_layers": 2}, "json"),
    ({"max_layers": 2, "criteria_form": "paper"}, "json"),
    ({"max_layers": 3, "k_child": 2, "k_expand": 2}, "json"),
    ({"max_layers": 3, "k_expand": 1}, "unreadable"),
])
def test_estimate_is_an_upper_bound_on_the_calls_of_fit_and_score(config, responder_kind):
    """No cache: every request reaches the backend. Six aspects (as HANNA), the run passes no aspect list."""
    dataset = _six_aspect_dataset()

    def responder(messages, params):
        if responder_kind == "unreadable" and "split up" not in messages[0]["content"] and len(messages) == 1:
            return "I cannot say."  # every first score reply fails, its follow-up answers: the bound is reached
        return _json_scripted(messages, params)

    method = HDEval(aggregator="lr", pi_repeats=2, **config)
    backend = FakeBackend(responder)
    llm = make_llm(LLMConfig(), store=None, backend=backend)
    judge = method.fit(dataset.samples[:8], dataset.aspect("relevance"), FitContext(llm=llm, task=TaskInfo.of(dataset)))
    fit_calls = len(backend.calls)
    judge.score(dataset.samples[8:], llm=llm)
    score_calls = len(backend.calls) - fit_calls
    estimate = method.estimate_calls(8, 2)
    assert fit_calls <= estimate["fit"] and score_calls <= estimate["score"]
    assert estimate == method.estimate_calls(8, 2, n_aspects=6)
    if responder_kind == "unreadable":
        assert score_calls == estimate["score"] == 2 * 2 * len(judge.state["features"]), \
            "each score reply got its follow-up"
    else:
        assert fit_calls > method.estimate_calls(8, 2, n_aspects=4)["fit"] / 2, "six aspects, not four"


def test_estimate_bounds_a_next_round_on_a_marked_tree(store):
    first, _, _, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2), responder=_json_scripted)
    tree = json.loads(json.dumps(first.state["tree"]))
    for n in tree["nodes"]:
        if n["id"] in ("style/style-part-2", "clarity/clarity-part-1"):
            n["expand"] = True
        if n["id"] == "grounded":
            n["redecompose"] = 1
    method = HDEval(aggregator="lr", max_layers=3, pi_repeats=2, criteria_tree=tree,
                    aspects=("clarity", "style", "grounded"))
    backend = FakeBackend(_json_scripted)
    llm = make_llm(LLMConfig(), store=None, backend=backend)
    judge = method.fit(_dataset().samples[:16], _dataset().aspect("clarity"),
                       FitContext(llm=llm, task=TaskInfo.of(_dataset())))
    fit_calls = len(backend.calls)
    judge.score(_dataset().samples[16:20], llm=llm)
    estimate = method.estimate_calls(16, 4)
    assert fit_calls <= estimate["fit"] and len(backend.calls) - fit_calls <= estimate["score"]
    # no cache: all 15 nodes of the given tree, grounded's 4 fresh children and 8 under the 2 marked nodes
    assert fit_calls == 3 + 16 * (15 + 8), "3 decompositions: grounded again and the 2 marked nodes"


def test_weighted_hd_eval_reads_each_criterion_at_the_digit_of_its_json_reply(store):
    """Score-first JSON: the digit is the 5th token; its alternatives (not the sampled digit) give the score."""
    from tests.test_criteria_scoring import TokenBackend

    def script(messages, params):
        text = messages[0]["content"]
        if "split up" in text:
            return [(_json_scripted(messages, params), {})]
        assert structured.kind_of(params.json_schema) == structured.SCORE and params.max_tokens <= 16
        signal = int(re.search(r"signal=(\d)", text).group(1))
        low, high = max(1, signal - 1), min(5, signal + 1)
        return [('{"', {'{"': 1.0}), ("score", {"score": 1.0}), ('":', {'":': 1.0}), (" ", {" ": 1.0}),
                (str(high), {str(high): 0.5, str(low): 0.5}), ("}", {"}": 1.0})]

    backend = TokenBackend(script)
    llm = make_llm(LLMConfig(), store=store, backend=backend)
    dataset = _dataset()
    judge = HDEval(aggregator="lr", max_layers=1, weighted=True, pi_repeats=2).fit(
        dataset.samples[:16], dataset.aspect("clarity"), FitContext(llm=llm, task=TaskInfo.of(dataset)))
    assert judge.state["reads"] == {"logprobs": 16 * 3}
    test = dataset.samples[16:18]
    for v, s in zip(judge.score(test, llm=llm), test):
        signal = float(re.search(r"signal=(\d)", s.output).group(1))
        expected = (max(1, signal - 1) + min(5, signal + 1)) / 2
        assert v.criteria["clarity"] == pytest.approx(expected), "the expectation at the digit, not the digit"
        assert v.metadata["source"] == "logprobs" and v.metadata["alternatives_criteria"] == 0


# ---- rubric checks on generated sub-criteria ------------------------------------------------------

COPIED = "hiccups are a holdover from early evolution when land animals had both gills and lungs"


def _wordy_dataset():
    """The toy dataset with a long judged text in every output, so a child can copy one."""
    base = _dataset()
    samples = tuple(Sample(**{**s.__dict__, "output": f"{s.output} {COPIED}"}) for s in base.samples)
    return Dataset(**{**base.__dict__, "samples": samples})


def _bad_children(parent_id="clarity"):
    """A copy of a judged text, a near-duplicate of a sibling and of an existing node, an empty and an over-long
    child, beside three good ones."""
    return [{"name": "Word choice", "definition": "The answer uses precise words."},
            {"name": "Evolution", "definition": COPIED},
            {"name": "Clear wording", "definition": "The answer uses clear and simple words that every reader knows."},
            {"name": "Clear words", "definition": "The answer uses clear and simple words that every reader knows."},
            {"name": "Clarity", "definition": "The answer is how clear."},  # the aspect node's words
            {"name": "...", "definition": "..."},
            {"name": "Detail", "definition": "Good detail: " + " ".join(f"term{i}" for i in range(250))},
            {"name": "Sentence order", "definition": "Ideas come in a logical order."}]


def _bad_responder(messages, params):
    if 'split up is "clarity"' in messages[0]["content"]:
        return json.dumps({"children": _bad_children()})
    return _json_scripted(messages, params)


def test_refused_sub_criteria_stay_out_of_the_tree_and_are_kept_with_rule_reason_and_parent(store):
    judge, _, _, events = _fit(store, HDEval(aggregator="lr", max_layers=2, k_child=8, pi_repeats=2),
                               dataset=_wordy_dataset(), responder=_bad_responder)
    children = [n["name"] for n in judge.state["tree"]["nodes"] if n.get("parent") == "clarity"]
    assert children == ["Word choice", "Clear wording", "Sentence order"]
    rejected = judge.state["rejected"]
    assert [(r["name"], r["rule"]) for r in rejected] == [
        ("Evolution", "copy"), ("Clear words", "near_duplicate"), ("Clarity", "near_duplicate"),
        ("...", "empty"), ("Detail", "too_long")]
    assert all(r["parent"] == "clarity" and r["stage"] == "decomposition" and not r["ok"] and r["reason"]
               for r in rejected)
    assert "How clear the answer is" in rejected[2]["reason"], "the existing aspect node is what it duplicates"
    assert [p for k, p in events if k == "rubric_rejected"] == rejected
    assert {p["parent"]: p["rejected"] for k, p in events if k == "decomposed"}["clarity"] == 5
    assert not any(r["parent"] != "clarity" for r in rejected), "the other aspects' children all pass"
    assert all(f not in judge.state["features"] for f in ("clarity/evolution", "clarity/detail"))


def test_a_child_restating_the_prompt_is_refused(store):
    def responder(messages, params):  # SmolLM2 on SummEval: the prompt's background said back as a child
        if 'split up is "clarity"' in messages[0]["content"]:
            return json.dumps({"children": [
                {"name": "The answer is judged on", "definition": "The answer is judged on"},
                {"name": "Word choice", "definition": "The answer uses precise words."},
                {"name": "Sentence order", "definition": "Ideas come in a logical order."}]})
        return _json_scripted(messages, params)

    judge, _, _, _ = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2), responder=responder)
    [refused] = judge.state["rejected"]
    # its definition is its name: nothing a rater could check
    assert refused["name"] == "The answer is judged on" and refused["rule"] == "circular"


def test_refused_sub_criteria_are_counted_in_the_run_summary(store):
    store.save_dataset(_wordy_dataset())
    run_id = create_run(store, RunSpec(method="hd_eval", dataset="toy", aspect="clarity", train_size=12,
                                       test_size=6, params={"aggregator": "lr", "max_layers": 2, "k_child": 8,
                                                            "pi_repeats": 2}))
    summary = execute_run(store, run_id, llm=_llm(store, _bad_responder)[0])
    [warning] = [w for w in summary.warnings if w.code == "rubric_rejected"]
    assert warning.count == 5
    assert "copy 1" in warning.message and "near duplicate 2" in warning.message
    assert "empty 1" in warning.message and "too long 1" in warning.message


def test_a_node_left_with_no_accepted_child_gets_more_draws_then_the_no_children_warning(store):
    def responder(messages, params):
        if 'split up is "style"' in messages[0]["content"]:
            # every draw holds only refused children; the copy said three times counts once
            if params.sample_index == 0:
                return json.dumps({"children": [{"name": "Evolution", "definition": COPIED},
                                                {"name": "...", "definition": "..."}]})
            return json.dumps({"children": [{"name": "Evolution", "definition": COPIED}]})
        if 'split up is "grounded"' in messages[0]["content"] and params.sample_index == 0:
            # one child refused, one kept: fewer than 2, so a draw is sampled and its children join the kept one
            return json.dumps({"children": [{"name": "Evolution", "definition": COPIED},
                                            {"name": "Source use", "definition": "Uses the source well."}]})
        return _json_scripted(messages, params)

    judge, _, backend, events = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2),
                                     dataset=_wordy_dataset(), responder=responder)
    draws = {}
    for m, p in backend.calls:
        if structured.kind_of(p.json_schema) == structured.DECOMPOSITION:
            parent = re.search(r'split up is "([^"]+)"', m[0]["content"]).group(1)
            draws.setdefault(parent, []).append(p.sample_index)
    assert draws["style"] == [0, 1, 2] and draws["grounded"] == [0, 1]
    nodes = judge.state["tree"]["nodes"]
    assert not [n for n in nodes if n.get("parent") == "style"]
    grounded = [n["name"] for n in nodes if n.get("parent") == "grounded"]
    assert len(grounded) == 4 and grounded[0] == "Source use", "the kept child, then the next draw's up to k = 4"
    [warning] = [w for w in judge.state["warnings"] if w["code"] == "no_children"]
    assert "'style'" in warning["message"] and "2 refused by the rubric checks" in warning["message"]
    by_parent = {}
    for r in judge.state["rejected"]:
        by_parent.setdefault(r["parent"], []).append((r["rule"], r["stage"]))
    assert by_parent == {"style": [("copy", "decomposition"), ("empty", "decomposition")],
                         "grounded": [("copy", "decomposition")]}


def test_a_facet_of_its_parent_passes_without_a_quality_word_and_unrelated_text_is_flagged():
    from judge_engine.methods.hd_eval import check_children

    topics = ("Summary", "coherence", "The summary should build from sentence to sentence to a coherent body.")
    children = [{"name": "Topic focus", "definition": "The summary stays on one topic."},
                {"name": "Sentence ordering", "definition": "Sentences follow a sensible order."},
                {"name": "Weather", "definition": "It rained on monday in the city."},
                {"name": "Word choice", "definition": "Uses varied vocabulary."}]
    kept, refused = check_children(children, topics=topics)
    assert [c["name"] for c in kept] == ["Topic focus", "Sentence ordering", "Weather", "Word choice"] and not refused
    assert {c["name"]: [f["rule"] for f in c.get("flags", [])] for c in kept} == {
        "Topic focus": [], "Sentence ordering": [], "Weather": ["no_quality"], "Word choice": ["no_quality"]}
    assert all(c.get("flags") for c in check_children(children)[0]), "without topics the vocabulary flags all"


def test_scoring_settings_score_first_with_the_score_budget():
    from judge_engine.criteria_scoring import ScoringSettings
    from judge_engine.methods.hd_eval import HDEvalSettings
    params = HDEval(layout="sample_first", weighted=True, score_max_tokens=12).get_params()
    assert HDEvalSettings.of(params).scoring == ScoringSettings(layout="sample_first", reasoning=False,
                                                                max_tokens=12, weighted=True)


def test_settings_hold_every_parameter_and_a_stored_run_gets_the_defaults_it_ran_with():
    from dataclasses import FrozenInstanceError, fields

    from judge_engine.methods.hd_eval import HDEvalSettings
    assert [f.name for f in fields(HDEvalSettings)] == HDEval._param_names(), "one field per parameter, same order"
    # a run stores only the parameters a person changed, and JSON gives the aspects back as a list
    settings = HDEval.settings_of({"k_child": 2, "aspects": ["clarity", "fluency"], "max_imputed_fraction": 0})
    assert (settings.k_child, settings.max_layers, settings.aspects) == (2, 3, ("clarity", "fluency"))
    assert isinstance(settings.max_imputed_fraction, float)
    guided = HDEval.settings_of({"guidelines": {"clarity": "  short sentences "}})
    assert guided.guideline("clarity") == "short sentences"
    assert HDEval.settings_of({}).guideline("clarity") == ""
    with pytest.raises(KeyError):
        HDEvalSettings.of({"k_child": 2})
    with pytest.raises(FrozenInstanceError):
        settings.k_child = 3


# ---- criteria forms: the paper's named sub-criteria, the sentence form for small models ---------

def _decompositions(backend):
    return [(m, p) for m, p in backend.calls if structured.kind_of(p.json_schema) == structured.DECOMPOSITION]


def test_the_paper_form_asks_for_named_children_without_an_opener_and_they_become_the_tree(store):
    judge, _, backend, events = _fit(store, HDEval(aggregator="lr", max_layers=2, k_child=3, pi_repeats=2,
                                                   criteria_form="paper"), responder=_json_scripted)
    asks = _decompositions(backend)
    assert len(asks) == 3 and all(len(m) == 1 for m, _ in asks)
    children = structured.schema_of(asks[0][1].json_schema)["properties"]["children"]
    assert (children["minItems"], children["maxItems"]) == (2, 3), "2 to k_child named children"
    assert children["items"]["type"] == "object" and list(children["items"]["properties"]) == ["name", "definition"]
    prompt = asks[0][0][0]["content"]
    assert "Give between 2 and 3 narrower criteria" in prompt and "a name of a few words" in prompt
    assert "A good answer" not in prompt and "Start every sentence" not in prompt, "no opener in the paper's form"
    assert judge.state["criteria_form"] == "paper"
    assert [p["criteria_form"] for k, p in events if k == "tree_started"] == ["paper"]
    clarity = [(n["name"], n["definition"]) for n in judge.state["tree"]["nodes"] if n.get("parent") == "clarity"]
    assert [name for name, _ in clarity] == ["clarity part 0", "clarity part 1", "clarity part 2"]
    assert all(d.startswith("Marker ") for _, d in clarity), "each named child keeps its own definition"
    assert judge.state["decomposition_reads"] == {"json": 3} and not judge.state["rejected"]
    # the scoring prompt shows the child's name and its definition, under its parent
    name, definition = clarity[0]
    scored = [m[0]["content"] for m, p in backend.calls if structured.kind_of(p.json_schema) == structured.SCORE
              and f"Criterion to apply: {name}\n" in m[0]["content"]]
    assert scored and all(f"Criterion to apply: {name}\n{definition}" in c and "clarity" in c for c in scored)


def test_the_paper_form_refuses_a_junk_named_child_and_keeps_the_others(store):
    def responder(messages, params):
        if 'split up is "clarity"' in messages[0]["content"]:
            return json.dumps({"children": [
                {"name": "The answer is judged on", "definition": "The answer is judged on"},
                {"name": "...", "definition": "..."},
                {"name": "Word choice", "definition": "The answer uses precise words for each technical term."},
                {"name": "Sentence order", "definition": "Ideas come in a logical order, the main point first."}]})
        return _json_scripted(messages, params)

    judge, _, _, events = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2, criteria_form="paper"),
                               responder=responder)
    kept = [n["name"] for n in judge.state["tree"]["nodes"] if n.get("parent") == "clarity"]
    assert kept == ["Word choice", "Sentence order"]
    assert [(r["name"], r["rule"]) for r in judge.state["rejected"]] == [
        ("The answer is judged on", "circular"), ("...", "empty")]
    assert {p["parent"]: p["read"] for k, p in events if k == "decomposed"}["clarity"] == "json"


def test_the_sentence_form_stays_as_it_was_when_chosen_on_any_backend(store):
    llm, backend = fake_llm(_json_scripted, store=store, backend="openai", model="gpt-4o-mini",
                            base_url="http://127.0.0.1:1")
    dataset = _dataset()
    judge = HDEval(aggregator="lr", max_layers=2, k_child=3, pi_repeats=2, criteria_form="sentence").fit(
        dataset.samples[:16], dataset.aspect("clarity"), FitContext(llm=llm, task=TaskInfo.of(dataset)))
    m, p = _decompositions(backend)[0]
    children = structured.schema_of(p.json_schema)["properties"]["children"]
    assert (children["minItems"], children["maxItems"]) == (4, 4) and children["items"]["pattern"].startswith(
        "^A good answer ")
    assert 'Start every sentence with "A good answer"' in m[0]["content"]
    assert judge.state["criteria_form"] == "sentence"


@pytest.mark.parametrize("config, resolved", [
    ({}, "sentence"),  # the default LLMConfig is the embedded model
    ({"backend": "openai", "model": "gpt-4o-mini", "base_url": "http://127.0.0.1:1"}, "paper"),
])
def test_auto_asks_in_the_sentence_form_on_the_embedded_model_only(store, config, resolved):
    llm, backend = fake_llm(_json_scripted, store=store, **config)
    dataset = _dataset()
    method = HDEval(aggregator="lr", max_layers=2, k_child=3, pi_repeats=2)
    assert method.criteria_form == "auto"
    judge = method.fit(dataset.samples[:16], dataset.aspect("clarity"), FitContext(llm=llm, task=TaskInfo.of(dataset)))
    assert judge.state["criteria_form"] == resolved and judge.params["criteria_form"] == "auto"
    item = structured.schema_of(_decompositions(backend)[0][1].json_schema)["properties"]["children"]["items"]
    assert ("pattern" in item) == (resolved == "sentence")


def test_an_unknown_criteria_form_is_refused_at_fit_time(store):
    with pytest.raises(ValueError, match="criteria_form='names'"):
        _fit(store, HDEval(criteria_form="names"))



def test_a_decomposition_reply_is_read_and_checked_into_named_parts():
    from judge_engine.methods.hd_eval import check_children
    from judge_engine.methods.hd_eval.decomposition import read_decomposition
    reply = json.dumps({"children": [{"name": "Topic focus", "definition": "The answer stays on the question's topic."},
                                     {"name": "Topic focus", "definition": "The same name again."},
                                     {"name": "Sentence ordering", "definition": "Sentences follow a logical order."}]})
    found = read_decomposition(reply, 3)
    assert found.read == "json" and [c["name"] for c in found.children] == ["Topic focus", "Sentence ordering"]
    checked = check_children(found.children, taken=["Sentence ordering"])
    assert [c["name"] for c in checked.kept] == ["Topic focus"]
    assert [(r["name"], r["rule"]) for r in checked.refused] == [("Sentence ordering", "near_duplicate")]
    assert read_decomposition("no children here", 3) == ([], "none"), "a reply with nothing usable"


@pytest.mark.parametrize("layout", ["sample_first", "paper"])
def test_below_layer_1_the_sample_first_prompt_names_the_parent_after_the_sample(layout):
    """Sample-first: every criterion of an item, in every layer, shares the prompt up to the criterion (so a
    backend that keeps prompt prefixes reads the sample once per item, not once per parent), and a child's
    parent and its aspect's guideline come with the criterion. The paper's layout still names the parent first."""
    from judge_engine.methods.hd_eval.scoring import hierarchy_aware_scoring

    tree = initial_tree([Aspect("clarity", 1, 5, "How clear it is"), Aspect("fluency", 1, 5, "How fluent it is")],
                        None)
    kids = add_children(tree, "clarity", [{"name": "Word choice", "abbrev": "wc", "definition": "Plain words"},
                                          {"name": "Structure", "abbrev": "st", "definition": "Clear order."}])
    kids += add_children(tree, "fluency", [{"name": "Grammar", "abbrev": "gr", "definition": "No errors"}])
    settings = HDEval.settings_of({"layout": layout, "guidelines": {"fluency": "mind the commas"}})
    llm, backend = fake_llm('{"score": 3}')
    samples = [Sample(id=f"s{i}", input=f"source {i}", output=f"summary {i}", group_id=f"g{i}") for i in range(2)]
    task = TaskInfo("summarisation", "Source", "Summary")
    scores = hierarchy_aware_scoring(samples, ["clarity", "fluency", *kids], tree, task=task, llm=llm,
                                     settings=settings)
    assert set(scores) == {"clarity", "fluency", *kids} and all(len(v) == 2 for v in scores.values())
    prompts = {}
    for messages, _ in backend.calls:
        text = messages[-1]["content"]
        prompts.setdefault("summary 0" in text, []).append(text)
    for item_prompts in prompts.values():
        assert len(item_prompts) == 5
        heads = {p[:p.index("summary")] for p in item_prompts}
        if layout == "sample_first":
            assert len({p[:p.index("Criterion to apply")] for p in item_prompts}) == 1, "one prefix per item"
            grammar = next(p for p in item_prompts if "Grammar" in p)
            tail = grammar[grammar.index("Criterion to apply"):]
            assert "part of judging fluency: How fluent it is." in tail and "mind the commas" in tail
        else:
            assert len(heads) == 3, "the paper names each parent (root, clarity, fluency) before the sample"


def test_a_node_that_gives_every_training_item_the_same_score_leaves_the_aggregator_with_that_reason(store):
    """Issue 65: a stub that obeys an order inside a criterion (one answer for every item) on 'part 1' children
    and otherwise follows the humans; such a node is refused on its training scores, in any language."""
    def responder(messages, params):
        text = messages[-1]["content"] if len(messages) == 1 else messages[0]["content"]
        if "Criterion to apply:" in text and " part 1" in text.split("Criterion to apply:")[1].split("\n")[0]:
            return _score_text(5, params)
        return scripted(messages, params)

    judge, _, _, events = _fit(store, HDEval(aggregator="lr", max_layers=2, pi_repeats=2), responder=responder)
    refused = [r for r in judge.state["rejected"] if r["rule"] == "same_score"]
    assert sorted(r["node"] for r in refused) == sorted(n["id"] for n in judge.state["tree"]["nodes"]
                                                        if n["name"].endswith(" part 1"))
    assert refused and all("same score (5)" in r["reason"] and r["name"].endswith(" part 1") for r in refused)
    assert not {r["node"] for r in refused} & set(judge.state["features"])
    assert [p["node"] for k, p in events if k == "node_refused"] == [r["node"] for r in refused]


def test_the_judges_own_check_of_each_child_is_an_event_and_a_step_of_the_progress_a_missing_verdict_with_its_reason(
        store):
    """Issue 65 item 2: on a server each child the rules accept is read by the run's own model; every verdict is a
    ``model_check`` event with its parent, and an empty reply or a refused check request is one recorded reason
    (the child then stands on the rules, the fit goes on). The requests count in the decomposition's progress."""
    from judge_engine.llm.base import RequestRejected
    from judge_engine.rubric_model_check import passing_reply

    class Server(FakeBackend):
        name = "openai"

    def respond(messages, params):
        text = messages[-1]["content"]
        if "<<<ENTRY>>>" not in text:
            return scripted(messages, params, as_json=True)
        entry = text.split("<<<ENTRY>>>")[1]
        if "part 1" in entry:
            return ""
        if "part 2" in entry:
            raise RequestRejected("refused", status=400, reason="content policy")
        return passing_reply()

    dataset, events, steps = _dataset(), [], []
    llm = make_llm(LLMConfig(backend="openai", model="m"), store=store, backend=Server(respond))
    judge = HDEval(aggregator="lr", max_layers=2, pi_repeats=2).fit(
        dataset.samples[:16], dataset.aspect("clarity"),
        FitContext(llm=llm, task=TaskInfo.of(dataset), log=lambda k, p: events.append((k, p)),
                   progress=lambda d, t, s: steps.append((d, t, s))))
    checks = [p for k, p in events if k == "model_check"]
    assert checks and all(p["parent"] for p in checks)
    missing = {p["text"].split(":")[0]: p["reason"] for p in checks if not p["answered"]}
    assert any("part 1" in name and reason == "the model gave an empty reply to the check request"
               for name, reason in missing.items())
    assert any("part 2" in name and "content policy" in reason for name, reason in missing.items())
    kept = [n["name"] for n in tree_index(judge.state["tree"]).values() if n["layer"] == 2]
    assert any("part 1" in n for n in kept) and any("part 2" in n for n in kept), "no verdict: the rules decide"
    decomposing = [(d, t) for d, t, s in steps if "the judge's own model reads each child" in s]
    assert decomposing and decomposing[-1][1] >= len(checks) and all(d <= t for d, t in decomposing)

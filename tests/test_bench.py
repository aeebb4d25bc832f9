"""Smoke runs of every ``python -m judge_engine.bench`` subcommand at tiny sizes.

They check the JSON each writes and the facts that do not depend on the
machine (calls made on a replay, requests lost or duplicated, row counts);
never wall-clock numbers.
"""

from __future__ import annotations

import json
import os

import pytest

from judge_engine.bench import alignment, app_latency, interleaved, median_ratio
from judge_engine.bench.__main__ import main

os.environ.setdefault("JUDGE_BENCH_QUIET", "1")


def bench(tmp_path, *argv: str) -> dict:
    assert main(["--out", str(tmp_path), *argv]) == 0
    doc = json.loads((tmp_path / f"{argv[0]}.json").read_text())
    assert {"benchmark", "date", "machine", "config", "summary", "rows", "notes"} <= set(doc)
    assert doc["benchmark"] == argv[0] and doc["machine"]["cpus"] >= 1
    assert len(list(tmp_path.glob(f"{argv[0]}-*.json"))) == 1  # a timestamped copy beside the latest
    return doc


def test_interleaving_alternates_the_order_and_ratios_are_paired():
    calls = []
    seconds = interleaved({"a": lambda r: calls.append(("a", r)), "b": lambda r: calls.append(("b", r))}, 3)
    assert calls == [("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2)]
    assert [len(v) for v in seconds.values()] == [3, 3]
    assert median_ratio([2.0, 4.0, 9.0], [1.0, 1.0, 3.0]) == 3.0


@pytest.mark.model
def test_replay_makes_no_call(tmp_path, shared_data):
    doc = bench(tmp_path, "replay", "--test-size", "2", "--repeats", "1")
    (row,) = doc["rows"]
    # --test-size 2 takes one whole Topical-Chat context (6 responses): a test group is never cut
    assert 2 <= row["first_calls"] <= 6 and row["replay_calls"] == 0
    assert row["replay_cache_hits"] == row["first_calls"]
    assert row["same_scores"] is True
    assert doc["summary"]["replay_calls_max"] == 0


@pytest.mark.model
def test_overhead_compares_three_arms_on_the_same_replies(tmp_path, shared_data):
    doc = bench(tmp_path, "overhead", "-n", "1", "--repeats", "1", "--max-tokens", "2")
    assert [r["arm"] for r in doc["rows"]] == ["raw", "engine", "engine_c4"]
    assert all(r["same_replies_as_raw"] for r in doc["rows"])
    assert doc["summary"]["engine_vs_raw_throughput"] > 0


@pytest.mark.model
def test_busy_machine_gives_one_reply_in_both_arms_and_leaves_a_busy_core(tmp_path):
    doc = bench(tmp_path, "busy-machine", "--busy", "1", "--repeats", "1", "--max-tokens", "4",
                "--article-repeats", "1")
    (row,) = doc["rows"]
    assert row["busy"] == 1 and row["follow_s"] > 0 and row["every_core_s"] > 0
    assert doc["summary"]["same_reply_every_arm"] is True
    if doc["config"]["usable_cores"] > 1:  # one core fewer for the spinner (more if other work ran meanwhile)
        assert max(row["threads_chosen"]) <= doc["config"]["usable_cores"] - 1


@pytest.mark.model
def test_token_rates_times_each_arm_and_the_score_arm_is_held_to_its_schema(tmp_path):
    doc = bench(tmp_path, "token-rates", "--repeats", "1", "--max-tokens", "24", "--article-repeats", "1")
    rows = {r["arm"]: r for r in doc["rows"]}
    assert set(rows) == {"free", "text", "score"}
    for r in rows.values():
        assert r["requests"] == 1 and r["generated_tokens_per_s"] > 0 and r["median_reply_tokens"] >= 1
    # a score-only reply is a few tokens of JSON: the grammar closes it well within 24 tokens
    assert rows["free"]["schema_valid"] is None, "free text has no schema to be held to"
    assert rows["score"]["schema_valid"] == 1 and rows["score"]["median_reply_tokens"] < 24
    assert doc["summary"]["text_tokens_per_s"] == pytest.approx(rows["text"]["generated_tokens_per_s"])


@pytest.mark.model
def test_layout_counts_evaluated_tokens_and_correlations(tmp_path, shared_data):
    doc = bench(tmp_path, "layout", "-n", "1", "-k", "2", "--repeats", "1", "--concurrency", "1",
                "--bootstrap", "10", "--batch-threads", "1")
    rows = {r["arm"]: r for r in doc["rows"]}
    assert set(rows) == {"paper_c1", "sample_first_c1"}
    for r in rows.values():
        assert r["prompt_tokens_sent"] > 0 and 0 < r["prompt_tokens_evaluated"] <= r["prompt_tokens_sent"] + 64
        assert r["calls"] == 2 + r["follow_ups"]
    assert "speedup_sample_first_c1" in doc["summary"] and doc["config"]["pick"] == "one_per_group"
    assert doc["config"]["batch_threads"] == 1
    first = rows["sample_first_c1"]
    # the second criterion reuses the sample's prefix from llama.cpp's KV cache (each arm starts cold)
    assert first["prompt_tokens_evaluated"] < 0.75 * first["prompt_tokens_sent"]
    assert first["prompt_tokens_evaluated"] < rows["paper_c1"]["prompt_tokens_evaluated"]
    # SmolLM2 answers the sample-first prompt with a number: no follow-up turn, no missing score
    assert first["follow_ups"] == 0 and first["missing"] == 0


def test_layout_picks_one_sample_per_source():
    from judge_engine.bench.layout import pick_samples
    from judge_engine.records import Sample
    samples = [Sample(id=f"s{i}", input="x", output="y", group_id=f"g{i // 3}", system_id="a", human={})
               for i in range(9)]
    assert [s.id for s in pick_samples(samples, 3)] == ["s0", "s3", "s6"]
    assert [s.id for s in pick_samples(samples, 2, "first")] == ["s0", "s1"]
    assert [s.id for s in pick_samples(samples, 2, skip=1)] == ["s3", "s6"]
    assert [s.id for s in pick_samples(samples, 2, "first", skip=1)] == ["s1", "s2"]


@pytest.mark.model
@pytest.mark.server
def test_concurrency_loses_and_duplicates_no_request(tmp_path, shared_data):
    from tests.llama_server import server_available
    if server_available():
        pytest.skip(server_available())
    doc = bench(tmp_path, "concurrency", "-n", "3", "--levels", "1", "4", "--repeats", "1", "--max-tokens", "2")
    assert [r["arm"] for r in doc["rows"]] == ["plain_loop", "engine_c1", "engine_c4"]
    for r in doc["rows"]:
        assert r["answers_per_repeat"] == 3 and r["backend_calls_per_repeat"] == [3]
        assert r["same_replies_as_sequential"]
    assert doc["summary"]["no_request_lost_or_duplicated"] is True


@pytest.mark.model
def test_scale_scores_every_item_from_the_cache(tmp_path):
    doc = bench(tmp_path, "scale", "--sizes", "40", "80", "--bootstrap", "10")
    assert [r["items"] for r in doc["rows"]] == [40, 80]
    for r in doc["rows"]:
        assert r["llm_calls"] == 0 and r["cache_hits"] == r["items"] == r["verdicts"]
        assert r["compare_rows"] == 2 and r["import_peak_mb"] > 0
    assert doc["summary"]["all_calls_cache_hits"] is True
    assert "growth_exponent 40->80" in doc["summary"]


@pytest.mark.model
def test_alignment_runs_each_method_on_the_same_items(tmp_path, shared_data):
    earlier = _row("sfres", "geval", 0.5)  # an earlier command's row in the same folder is kept
    (tmp_path / "alignment.json").write_text(json.dumps({"date": "d0", "rows": [earlier]}))
    doc = bench(tmp_path, "alignment", "--datasets", "topical_chat", "--methods", "direct", "--train-size", "2",
                "--test-size", "2")
    kept, row = doc["rows"]
    assert kept == earlier and row["llm"].startswith("llamacpp") and row["test_size"] == 2
    assert "error" not in row, row
    # --test-size 2 takes one whole Topical-Chat context (6 responses): a test group is never cut
    assert row["n"] == 6 and row["calls"] + row["cache_hits"] >= 6 and row["level"] in ("sample", "group", "system")
    assert 0 <= row["distinct_scores"] <= 6 and "n_groups" in row and "sample_spearman" in row
    assert doc["summary"] == {"runs": 2, "failed": 0}


def _row(dataset, method, spearman, **extra):
    return {"dataset": dataset, "aspect": "a", "method": method, "llm": "llamacpp: x", "train_size": 12,
            "test_size": 16, "seed": 0, "level": "sample", "n": 16, "spearman": spearman,
            "spearman_ci": [0.1, 0.9], "pearson": spearman, "pearson_ci": [0.2, 0.8], "n_groups": 0,
            "sample_spearman": spearman, "sample_pearson": spearman, "parse_failures": 0, "distinct_scores": 16,
            "calls": 5, "cache_hits": 1, "seconds": 12.4, **extra}


def test_alignment_merge_keeps_the_rows_not_measured_again():
    previous = {"date": "d0", "rows": [_row("sfres", "direct", 0.1), _row("sfres", "geval", 0.2)]}
    doc = {"benchmark": "alignment", "date": "d1", "config": {}, "summary": {},
           "rows": [_row("sfres", "geval", 0.3), _row("sfres", "geval", 0.4, llm="openai: y")]}
    merged = alignment.merge(previous, doc)
    assert [(r["method"], r["spearman"]) for r in merged["rows"]] == [("direct", 0.1), ("geval", 0.3), ("geval", 0.4)]
    assert merged["summary"] == {"runs": 3, "failed": 0} and merged["config"]["merged_from"] == "d0"


def test_alignment_markdown_says_why_a_coefficient_is_missing():
    rows = [_row("sfres", "geval", 0.5),
            _row("summeval", "direct", float("nan"), pearson=None, parse_failures=4, distinct_scores=1),
            _row("hanna", "hpss", 0.25, level="group", n_groups=1, sample_spearman=0.3),
            _row("hanna", "direct", None, pearson=None, parse_failures=16, distinct_scores=0)]
    text = alignment.markdown({"rows": rows})
    lines = text.splitlines()
    assert len(lines) == 6 and lines[2].startswith("| summeval (a) | direct |")  # datasets in docs/benchmarks.md's order
    assert "| n/a (all 12 read scores equal) |" in text and "| n/a (no score read) |" in text
    assert "| 0.50 [0.10, 0.90] | 0.50 [0.20, 0.80] | 16 | 0 | 5 (1) | 12 |" in text
    assert "| group (1 group) | 0.25 (no CI: too few groups); sample 0.30 |" in text
    assert "| geval |" in text  # one backend: not named
    two = alignment.markdown({"rows": rows + [_row("sfres", "geval", 0.5, llm="openai: m @ http://h/v1")]})
    assert "| geval (llamacpp: x) |" in two and "| geval (openai: m @ http://h/v1) |" in two


def test_alignment_rejects_an_unknown_method_before_any_work(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["--out", str(tmp_path), "alignment", "--methods", "nope"])
    assert info.value.code == 2 and "nope" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.json"))


def test_alignment_names_a_params_value_that_is_not_json(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["--out", str(tmp_path), "alignment", "--methods", "direct", "--params", "hpss={bad"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "--params 'hpss={bad'" in err and "not JSON" in err and "Traceback" not in err


def test_app_pages_are_read_from_the_navigation():
    stems = [stem for stem, _ in app_latency.app_pages()]
    assert "home" in stems and "runs" in stems
    assert dict(app_latency.app_pages())["home"] == ""


@pytest.mark.model  # the runs are scored by the real llama.cpp backend (from pre-inserted cache rows)
def test_app_bench_seeds_the_compare_page_with_k_runs_scored_from_the_cache(tmp_path):
    from judge_engine.store import Store

    ids = app_latency.seed_compare(tmp_path / "compare.db", 30, 3)
    store = Store(tmp_path / "compare.db")
    runs = [store.get_run(i) for i in ids]
    assert len(runs) == 3 and {r["status"] for r in runs} == {"finished"}
    assert {r["dataset"] for r in runs} == {"synthetic_30"}
    assert all(r["ledger"]["calls"] == 0 and len(store.load_verdicts(r["id"])) == 30 for r in runs)
    scores = [tuple(v.score for v in sorted(store.load_verdicts(r["id"]), key=lambda v: v.sample_id)) for r in runs]
    assert len(set(scores)) == 3, "each run has its own cache rows, so the compared runs differ"
    # each run's probes kept, as the app's worker keeps them once a run is finished
    assert sorted(r["run_id"] for r in store.db.query("select run_id from probe_reports")) == sorted(ids)


def test_app_bench_refuses_a_compare_page_without_runs(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["--out", str(tmp_path), "app", "--compare-items", "40", "--compare-runs", "0"])
    assert info.value.code == 2 and "--compare-runs must be at least 1" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.browser
def test_app_latency_renders_a_page(tmp_path, shared_data):
    if app_latency.available():
        pytest.skip(app_latency.available())
    doc = bench(tmp_path, "app", "--repeats", "1", "--pages", "settings", "--compare-items", "40",
                "--compare-runs", "2")
    with_probes, without, unkept, fresh, row = doc["rows"]
    assert row["page"] == "settings" and row["exception"] is False and row["first_render_s"] > 0
    # a fresh server's first visit, timed to its first sign (spinner or heading) and to its heading
    assert fresh["page"] == "first visit of a fresh server (home)" and not fresh["exception"]
    assert 0 < fresh["first_sign_s"] <= fresh["first_render_s"]
    assert row["heading"] != "Judge Workbench", "the page itself was timed, not the name gate before it"
    # the compare page timed with its probes and without them (?probes=off), side by side, and with no report kept
    assert (with_probes["page"], without["page"], unkept["page"]) == (
        "compare (plots drawn)", "compare without probes", "compare, probes computed on the visit")
    assert not with_probes["exception"] and not without["exception"] and without["idle_s"] > 0
    assert len(with_probes["probes_kept_by_worker_s"]) == 2
    # the script's end comes after its plots (the probes are filled after them)
    assert all(r["plots_s"] <= r["idle_s"] for r in (with_probes, without, unkept))
    assert with_probes["probes_share_of_idle_s"] == pytest.approx(1 - without["idle_s"] / with_probes["idle_s"],
                                                                  abs=1e-3)


@pytest.mark.model
def test_hostile_reports_a_hijack_rate_per_attack(tmp_path, shared_data):
    from judge_engine.hostile import INJECTIONS

    doc = bench(tmp_path, "hostile", "--dataset", "sfres", "-n", "1")
    assert [r["attack"] for r in doc["rows"]] == [kind for kind, _ in INJECTIONS]
    assert all(r["pairs"] + r["missing"] == 1 for r in doc["rows"])
    assert doc["summary"]["pairs"] == sum(r["pairs"] for r in doc["rows"])


@pytest.mark.server
def test_score_scale_scores_every_item_like_the_plain_client_and_again_from_the_cache(tmp_path):
    doc = bench(tmp_path, "score-scale", "--items", "60", "--levels", "2", "8", "--repeats", "1",
                "--memory-sizes", "30", "90")
    speed = [r for r in doc["rows"] if r["arm"] != "memory"]
    assert [r["concurrency"] for r in speed] == [2, 8]
    for r in speed:
        assert r["lines_written"] == [60] and r["same_scores_as_plain"] is True
        assert r["engine_vs_plain"] > 0 and r["engine_cpu_ms_per_item"] > 0
        assert len(r["ratio_per_repeat"]) == 1 and r["ratio_per_repeat"][0] == pytest.approx(r["engine_vs_plain"])
    assert doc["summary"]["warm_cache_calls_sent"] == 0
    parts = doc["summary"]["engine_cpu_ms_per_item_at_lowest"]
    assert {"openai_client_call", "cache_write", "rest_of_the_engine", "total"} == set(parts)
    memory = [r for r in doc["rows"] if r["arm"] == "memory"]
    assert [(r["items"], r["lines_written"]) for r in memory] == [(30, [30, 30]), (90, [90, 90])]
    assert all(r["scripted_peak_rss_mb"] > 10 and r["cli_warm_peak_rss_mb"] > 10 for r in memory)
    assert set(doc["summary"]["memory_growth"]) == {"scripted", "cli_warm"}

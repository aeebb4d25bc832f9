"""Importers (built-in benchmarks, user tables) and grouped splits."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from judge_engine.data import (
    BENCHMARKS,
    CsvDialect,
    DataImportError,
    SplitError,
    available_benchmarks,
    default_data_dir,
    detect_dialect,
    find_duplicates,
    inspect_table,
    load_benchmark,
    load_table,
    make_split,
    parse_number,
    preview_table,
)
from judge_engine.data.splits import MIN_TEST_GROUPS, MIN_TEST_ITEMS_PER_GROUP
from judge_engine.records import Aspect, Dataset, Sample

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no benchmark data at {SHARED_DATA}")

_CACHE: dict[str, Dataset] = {}


def bench(name: str) -> Dataset:
    if name not in _CACHE:
        _CACHE[name] = load_benchmark(name, SHARED_DATA)
    return _CACHE[name]


# --------------------------------------------------------------------------- built-ins

EXPECTED = {
    # name: (items, groups, systems, aspects -> (low, high), natural level)
    "summeval": (1600, 100, 16, {"coherence": (1, 5), "consistency": (1, 5), "fluency": (1, 5),
                                 "relevance": (1, 5)}, "group"),
    "topical_chat": (360, 60, 6, {"understandability": (0, 1), "naturalness": (1, 3),
                                  "coherence": (1, 3), "engagingness": (1, 3),
                                  "groundedness": (0, 1), "overall": (1, 5)}, "sample"),
    # sf*: doc_id is unique per record; groups are the distinct dialogue acts; no system ids.
    "sfhot": (875, 398, 1, {"informativeness": (1, 6), "naturalness": (1, 6), "overall": (1, 6)},
              "sample"),
    "sfres": (1181, 580, 1, {"informativeness": (1, 6), "naturalness": (1, 6), "overall": (1, 6)},
              "sample"),
    "hanna": (1056, 96, 11, {"relevance": (1, 5), "coherence": (1, 5), "empathy": (1, 5),
                             "surprise": (1, 5), "engagement": (1, 5), "complexity": (1, 5)},
              "group"),
    # newsroom: the released file carries no system ids.
    "newsroom": (420, 60, 1, {"coherence": (1, 5), "fluency": (1, 5), "informativeness": (1, 5),
                              "relevance": (1, 5)}, "sample"),
    "writingprompt_a": (400, 188, 1, {"cohesive": (1, 5), "enjoy": (1, 5), "grammar": (1, 5),
                                      "relevant": (1, 5)}, "sample"),
}


def test_benchmark_registry():
    assert list(BENCHMARKS) == list(EXPECTED)
    for name, spec in BENCHMARKS.items():
        assert spec.name == name and spec.task and spec.input_label and spec.output_label
        assert spec.natural_level in ("sample", "group", "system")
        for a in spec.aspects:
            assert a.low < a.high
            assert a.definition.endswith(".") and 20 < len(a.definition) < 200
    assert (BENCHMARKS["summeval"].input_label, BENCHMARKS["summeval"].output_label) == ("Article", "Summary")
    assert BENCHMARKS["topical_chat"].input_label == "Dialogue history"
    assert BENCHMARKS["topical_chat"].context_label == "Fact"
    assert BENCHMARKS["sfhot"].input_label == "Dialogue act"
    assert BENCHMARKS["hanna"].output_label == "Story"


@needs_data
@pytest.mark.parametrize("name", list(EXPECTED))
def test_benchmark_shape(name):
    ds = load_benchmark(name, SHARED_DATA)
    _CACHE[name] = ds
    n, n_groups, n_systems, ranges, level = EXPECTED[name]
    assert ds.name == name and ds.natural_level == level
    assert len(ds.samples) == n
    assert len({s.group_id for s in ds.samples}) == n_groups
    assert len({s.system_id for s in ds.samples}) == n_systems
    assert {a.name: (a.low, a.high) for a in ds.aspects} == ranges
    assert len({s.id for s in ds.samples}) == n  # unique ids
    assert ds.input_label == BENCHMARKS[name].input_label
    for s in ds.samples:
        assert s.output.strip() and s.input.strip()
        assert set(s.human) == set(ranges)
        for aspect, value in s.human.items():
            lo, hi = ranges[aspect]
            assert lo <= value <= hi and math.isfinite(value)
    # stable ids: a second load gives the same ids in the same order
    assert [s.id for s in load_benchmark(name, SHARED_DATA).samples] == [s.id for s in ds.samples]


@needs_data
def test_summeval_values():
    ds = bench("summeval")
    first = ds.samples[0]
    assert first.id == "0:M11" and first.group_id == "0" and first.system_id == "M11"
    assert first.human["coherence"] == pytest.approx(1.3333333333)
    assert first.human["consistency"] == 1.0 and first.human["fluency"] == 3.0
    assert first.input.startswith("Paul Merson has restarted his row with Andros Townsend")
    assert first.reference.startswith("Andros Townsend an 83rd minute sub")
    assert "ctc_relevance" not in ds.aspect_names
    assert all("ctc_relevance" not in s.human for s in ds.samples)
    per_group = {}
    for s in ds.samples:
        per_group.setdefault(s.group_id, set()).add(s.system_id)
    assert all(len(v) == 16 for v in per_group.values())


@needs_data
def test_topical_chat_values():
    ds = bench("topical_chat")
    s = ds.by_id()["0"]
    assert s.system_id == "Original Ground Truth"
    assert s.context.startswith("from left , emma baker")
    assert s.human["understandability"] == 1.0
    assert s.human["overall"] == pytest.approx(4.6666666667)
    assert s.input.startswith("so , i 'm reading the latest film from studio ghibli")
    assert {len([x for x in ds.samples if x.group_id == g]) for g in {x.group_id for x in ds.samples}} == {6}


@needs_data
def test_sf_values():
    hot = bench("sfhot").by_id()["0"]
    assert hot.input == "confirm(area='cathedral hill')" and hot.output == "You want a hotel in the cathedral hill ?"
    assert hot.reference == "Confirms the area cathedral hill ."
    assert hot.human == {"informativeness": 4.5, "naturalness": 3.5, "overall": 4.0}
    assert hot.group_id == hot.input  # grouped by dialogue act
    res = bench("sfres").by_id()["0"]
    assert res.input == "confirm(area=dont_care)" and res.human["overall"] == 1.0


@needs_data
def test_hanna_values():
    ds = bench("hanna")
    by_id = ds.by_id()
    s0 = by_id["0"]
    assert s0.system_id == "0" and s0.metadata["human_written"] is True
    assert s0.human["relevance"] == pytest.approx(3.6666666667)
    assert s0.human["empathy"] == pytest.approx(2.3333333333)
    assert by_id["290"].system_id == "3" and by_id["290"].metadata["human_written"] is False
    # the group is the prompt: story k and k + 96 answer the same prompt
    assert by_id["5"].group_id == by_id[str(5 + 96 * 7)].group_id != by_id["6"].group_id
    assert by_id["5"].input == by_id[str(5 + 96 * 7)].input


@needs_data
def test_newsroom_values():
    ds = bench("newsroom")
    s = ds.by_id()["2140:0"]
    assert s.group_id == "2140"
    assert s.human["coherence"] == pytest.approx(2.6666666667)
    assert s.input.startswith("A worker sets up a polling station")
    assert "Editor's note" in s.input and "\n\n" in s.input
    assert s.output.startswith("John Avlon voter turnout")
    for x in ds.samples:
        assert "</p>" not in x.input and "<p>" not in x.input
        assert "&#x27;" not in x.input and "&quot;" not in x.input and "&#x27;" not in x.output


@needs_data
def test_writingprompt_a_values():
    ds = bench("writingprompt_a")
    s = ds.by_id()["0"]
    assert s.annotators["cohesive"] == [4.0, 3.0, 3.0]
    assert s.human["cohesive"] == pytest.approx(10 / 3)
    assert s.human["relevant"] == pytest.approx(8 / 3)
    assert s.metadata["human_written"] is True
    assert s.input == "A sequence from an RTS game, from the perspective of the units."
    assert sum(x.metadata["human_written"] for x in ds.samples) == 200
    assert all(len(v) == 3 for x in ds.samples for v in x.annotators.values())


@needs_data
def test_available_and_default_dir(monkeypatch, tmp_path):
    assert available_benchmarks(SHARED_DATA) == list(EXPECTED)
    assert available_benchmarks(tmp_path) == []
    monkeypatch.setenv("JUDGE_WORKBENCH_DATA", str(tmp_path))
    assert default_data_dir() == tmp_path
    assert available_benchmarks() == []
    monkeypatch.delenv("JUDGE_WORKBENCH_DATA")
    assert default_data_dir() == SHARED_DATA.resolve()


def test_load_benchmark_errors(tmp_path):
    with pytest.raises(ValueError, match="known: summeval"):
        load_benchmark("nope", tmp_path)
    with pytest.raises(DataImportError, match="not found"):
        load_benchmark("summeval", tmp_path)


def _write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_python_dict_string_scores(tmp_path):
    """The README's native formats: scores (and wp_a records) as Python-dict strings."""
    rec = {"source": "hi \n", "context": "fact", "system_id": "A", "system_output": "hello",
           "scores": "{'understandability': 1.0, 'naturalness': 2.5, 'coherence': 2, "
                     "'engagingness': 3, 'groundedness': 0, 'overall': 4}"}
    _write_json(tmp_path / "topical_chat" / "topical_chat.json", [rec, dict(rec, system_id="B")])
    ds = load_benchmark("topical_chat", tmp_path)
    assert ds.samples[0].human["naturalness"] == 2.5 and ds.samples[1].system_id == "B"
    assert ds.samples[0].group_id == ds.samples[1].group_id

    wp = {"0": "{'cohesive': [1, 2, 3], 'enjoy': [2, 2, 2], 'grammar': [5, 5, 4], "
               "'relevant': [1, 1, 1], 'human_written': 0, 'prompt': 'P', 'story': 'S'}"}
    _write_json(tmp_path / "writingprompt_a" / "wp_a.json", wp)
    s = load_benchmark("writingprompt_a", tmp_path).samples[0]
    assert s.human["cohesive"] == 2.0 and s.annotators["grammar"] == [5.0, 5.0, 4.0]
    assert s.metadata["human_written"] is False

    # never eval'd: code in a scores string is a data error, not executed
    bad = dict(rec, scores="__import__('os').system('echo pwned')")
    _write_json(tmp_path / "topical_chat" / "topical_chat.json", [rec, bad])
    with pytest.raises(DataImportError) as err:
        load_benchmark("topical_chat", tmp_path)
    assert "topical_chat.json" in str(err.value) and err.value.row == 2
    assert err.value.column == "scores"


def test_newsroom_html_cleaning(tmp_path):
    src = "First para &amp; more.</p><p>Second &quot;quoted&quot; &lt;b&gt;not a tag&lt;/b&gt;."
    recs = [{"doc_id": "7", "source": src, "system_output": "it&#x27;s short",
             "scores": str({"coherence": 3, "fluency": 4, "informativeness": 2, "relevance": 5})}] * 2
    _write_json(tmp_path / "newsroom" / "newsroom.json", recs)
    ds = load_benchmark("newsroom", tmp_path)
    s = ds.samples[0]
    assert s.input == 'First para & more.\n\nSecond "quoted" <b>not a tag</b>.'
    assert s.output == "it's short"
    assert [x.id for x in ds.samples] == ["7:0", "7:1"]


def test_benchmark_file_errors(tmp_path):
    path = tmp_path / "summeval" / "summeval_ctc.jsonl"
    path.parent.mkdir()
    good = json.dumps({"src": "a", "ref_summs": "r", "sys_summs": {"M0": {"sys_summ": "s", "scores": {
        "coherence": 1, "consistency": 2, "fluency": 3, "relevance": 4, "ctc_relevance": 0.5}}}})
    path.write_text(good + "\n" + good + "\n{broken\n", encoding="utf-8")
    with pytest.raises(DataImportError) as err:
        load_benchmark("summeval", tmp_path)
    assert err.value.row == 3 and "summeval_ctc.jsonl, row 3" in str(err.value)
    path.write_text(good + "\n" + good.replace('"fluency": 3, ', "") + "\n", encoding="utf-8")
    with pytest.raises(DataImportError, match="no 'fluency'") as err:
        load_benchmark("summeval", tmp_path)
    assert err.value.row == 2
    path.write_text(good + "\n" + good + "\n", encoding="utf-8")
    ds = load_benchmark("summeval", tmp_path)
    assert [s.id for s in ds.samples] == ["0:M0", "1:M0"]
    assert ds.samples[0].human == {"coherence": 1, "consistency": 2, "fluency": 3, "relevance": 4}


# --------------------------------------------------------------------------- splits


def _toy(group_sizes: list[int], name: str = "toy", level: str = "group") -> Dataset:
    samples = []
    for g, size in enumerate(group_sizes):
        for k in range(size):
            samples.append(Sample(id=f"{g}-{k}", input=f"in {g}", output=f"out {g} {k}",
                                  group_id=f"g{g}", human={"q": float(k)}))
    return Dataset(name=name, task="", aspects=(Aspect("q", 0, 10),), samples=tuple(samples), natural_level=level)


def _check_split(ds: Dataset, split, train_size: int, test_size: int | None = None):
    group_of = {s.id: s.group_id for s in ds.samples}
    train_groups = {group_of[i] for i in split.train_ids}
    test_groups = {group_of[i] for i in split.test_ids}
    assert not train_groups & test_groups  # no group in both parts
    assert len(set(split.train_ids)) == len(split.train_ids)
    assert len(split.train_ids) == train_size  # train is exactly train_size items
    sizes: dict[str, int] = {}
    for s in ds.samples:
        sizes[s.group_id] = sizes.get(s.group_id, 0) + 1
    if test_size is not None:
        assert len(split.test_ids) >= test_size
        # each test group gives all its items or at least MIN_TEST_ITEMS_PER_GROUP of them
        given: dict[str, int] = {}
        for i in split.test_ids:
            given[group_of[i]] = given.get(group_of[i], 0) + 1
        assert all(n == sizes[g] or n >= MIN_TEST_ITEMS_PER_GROUP for g, n in given.items())
    else:  # test is every group train does not use, whole
        assert sum(sizes[g] for g in test_groups) == len(split.test_ids)
    # train is spread over groups: a group gives a second item only when the others gave one each
    counts: dict[str, int] = {}
    for i in split.train_ids:
        counts[group_of[i]] = counts.get(group_of[i], 0) + 1
    for a, n_a in counts.items():
        for n_b in counts.values():
            assert n_a >= n_b - 1 or n_a == sizes[a]


@needs_data
@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("name", list(EXPECTED))
def test_benchmark_splits(name, seed):
    ds = bench(name)
    split = make_split(ds, train_size=30, seed=seed)
    _check_split(ds, split, 30)
    assert split.dataset == name and split.seed == seed
    assert make_split(ds, train_size=30, seed=seed) == split  # deterministic
    ds.subset(list(split.train_ids))  # all ids exist
    # test = every group train does not use
    train_groups = {s.group_id for s in ds.subset(list(split.train_ids))}
    assert len(split.test_ids) == sum(1 for s in ds.samples if s.group_id not in train_groups)
    small = make_split(ds, train_size=30, test_size=100, seed=seed)
    _check_split(ds, small, 30, 100)
    assert make_split(ds, train_size=30, test_size=100, seed=seed) == small


@needs_data
def test_split_on_summeval_spreads_train_and_test_over_articles():
    ds = bench("summeval")  # 100 articles x 16 summaries
    for seed in (0, 1, 2):
        split = make_split(ds, train_size=30, test_size=40, seed=seed)
        articles = {s.group_id for s in ds.subset(list(split.train_ids))}
        # the old rule took 2 whole articles (32 items); HypoEval draws ~30 random pairs
        assert len(split.train_ids) == 30 and len(articles) == 30
        test_articles = {s.group_id for s in ds.subset(list(split.test_ids))}
        # 5 summaries from each of 8 articles (whole articles held 3, too few for a group-level interval)
        assert len(split.test_ids) == 5 * len(test_articles) == 40
        assert not articles & test_articles
    assert make_split(ds, train_size=30, seed=0).train_ids != make_split(ds, train_size=30, seed=1).train_ids
    assert len(make_split(ds, train_size=16).train_ids) == 16


def test_split_toy_cases():
    ds = _toy([3, 5, 2, 7, 4, 1, 6, 2])
    for seed in range(20):
        split = make_split(ds, train_size=10, seed=seed)
        _check_split(ds, split, 10)
        assert make_split(ds, train_size=10, seed=seed) == split  # seeded: reproducible
        split = make_split(ds, train_size=5, test_size=4, seed=seed)
        _check_split(ds, split, 5, 4)
        # five items from five different groups (8 groups: too few to spread test over an interval's 5 and
        # leave train half, so test keeps whole groups)
        assert len({i.split("-")[0] for i in split.train_ids}) == 5
    assert len({make_split(ds, train_size=5, test_size=4, seed=s).train_ids for s in range(10)}) > 1
    split = make_split(ds, train_size=0, seed=0)
    assert split.train_ids == () and len(split.test_ids) == len(ds.samples)
    # fewer groups than train items: every reachable group gives one item, then a second, ...
    split = make_split(_toy([10, 10, 10, 10]), train_size=6, test_size=10, seed=4)
    per_group: dict[str, int] = {}
    for i in split.train_ids:
        per_group[i.split("-")[0]] = per_group.get(i.split("-")[0], 0) + 1
    assert sorted(per_group.values()) == [2, 2, 2]
    assert split.to_dict()["train_ids"] == list(split.train_ids)


def test_split_spreads_test_over_groups_and_keeps_them_out_of_train():
    # the old rule kept whole groups: test_size=8 on groups of 6 gave 2 groups, no group-level interval
    ds = _toy([6] * 20)
    for seed in range(10):
        split = make_split(ds, train_size=3, test_size=8, seed=seed)
        _check_split(ds, split, 3, 8)
        test_groups = {i.split("-")[0] for i in split.test_ids}
        assert len(test_groups) == MIN_TEST_GROUPS and len(split.test_ids) == 3 * MIN_TEST_GROUPS
    # at the sample level test keeps whole groups (a quick look on a fast backend asks for more items instead)
    split = make_split(_toy([6] * 20, level="sample"), train_size=3, test_size=8, seed=0)
    assert len(split.test_ids) == 12  # two whole groups
    # a small dataset, whose test cannot span an interval's groups, keeps whole groups and leaves train its own
    small = _toy([6, 6, 6, 6])
    for seed in range(5):
        split = make_split(small, train_size=3, test_size=8, seed=seed)
        _check_split(small, split, 3, 8)
        assert len(split.test_ids) == 12  # two whole groups
    # enough groups but too few items left for a wide spread: a narrower one that still gives an interval
    split = make_split(_toy([3] * 12), train_size=12, test_size=10, seed=0)
    _check_split(_toy([3] * 12), split, 12, 10)
    assert len({i.split("-")[0] for i in split.test_ids}) >= 5


def test_min_test_groups_leaves_a_group_level_interval():
    from judge_engine.metrics import MIN_BOOTSTRAP_UNITS

    # one more group than an interval needs, for a group whose drawn items tie
    assert MIN_TEST_GROUPS > MIN_BOOTSTRAP_UNITS


def test_split_too_small():
    with pytest.raises(SplitError, match="nothing to test"):
        make_split(_toy([20, 20]), train_size=30)
    with pytest.raises(SplitError, match="1 group"):
        make_split(_toy([50]), train_size=30)
    with pytest.raises(SplitError, match="leaves nothing"):
        make_split(_toy([5, 5]), train_size=10)
    with pytest.raises(SplitError, match="too large"):
        make_split(_toy([10, 10, 10]), train_size=10, test_size=25)
    with pytest.raises(ValueError):
        make_split(_toy([10, 10]), train_size=-1)


# --------------------------------------------------------------------------- user tables


def _csv(path: Path, header: list[str], rows: list[list], encoding="utf-8") -> Path:
    with open(path, "w", newline="", encoding=encoding) as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


HEADER = ["id", "article", "summary", "coh", "flu", "doc", "model"]
ROWS = [
    ["a", "Doc one text", "Sum 1", "4", "5", "d1", "m1"],
    ["b", "Doc one text", "Sum 2", "2.5", "3", "d1", "m2"],
    ["c", "Doc two, with comma", "Sum 3\nsecond line", "1", "4", "d2", "m1"],
    ["d", "Doc two, with comma", "Sum 4", "3", "2", "d2", "m2"],
]


def test_csv_happy_path(tmp_path):
    path = _csv(tmp_path / "scores.csv", HEADER, ROWS)
    calls, warnings = [], []
    ds = load_table(path, input_col="article", output_col="summary",
                    score_cols={"coherence": "coh", "fluency": "flu"}, group_col="doc",
                    system_col="model", id_col="id", aspect_ranges={"coherence": (1, 5)},
                    task="summaries", progress=lambda d, t: calls.append((d, t)), warnings=warnings)
    assert ds.name == "scores" and ds.task == "summaries" and ds.source == str(path)
    assert [s.id for s in ds.samples] == ["a", "b", "c", "d"]
    assert ds.samples[1].human == {"coherence": 2.5, "fluency": 3.0}
    assert ds.samples[2].output == "Sum 3\nsecond line"
    assert ds.samples[2].input == "Doc two, with comma"
    assert [s.group_id for s in ds.samples] == ["d1", "d1", "d2", "d2"]
    assert [s.system_id for s in ds.samples] == ["m1", "m2", "m1", "m2"]
    assert ds.aspect("coherence").low == 1 and ds.aspect("coherence").high == 5
    assert (ds.aspect("fluency").low, ds.aspect("fluency").high) == (2, 5)  # observed
    assert calls[-1] == (4, 4) and warnings == []
    split = make_split(ds, train_size=2, seed=0)
    assert len(split.train_ids) == 2 and len(split.test_ids) == 2


def test_csv_defaults_and_inspect(tmp_path):
    path = _csv(tmp_path / "plain.csv", HEADER, ROWS)
    cols, preview = inspect_table(path, limit=2)
    assert cols == HEADER and len(preview) == 2 and preview[0]["summary"] == "Sum 1"
    ds = load_table(path, input_col="article", output_col="summary", score_cols=["coh"])
    assert ds.aspect_names == ["coh"]
    # no id column: the row number (header is row 1; the quoted newline spans a line)
    assert [s.id for s in ds.samples] == ["2", "3", "4", "6"]
    assert [s.group_id for s in ds.samples] == [s.id for s in ds.samples]  # each row its own group
    # a UTF-8 BOM and a semicolon-free TSV also work
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert inspect_table(bom)[0][0] == "id"
    tsv = tmp_path / "t.tsv"
    tsv.write_text("in\tout\ts\nx\ty\t1\nx2\ty2\t2\n", encoding="utf-8")
    assert len(load_table(tsv, input_col="in", output_col="out", score_cols=["s"]).samples) == 2


def test_jsonl_and_json_happy_path(tmp_path):
    recs = [{"q": "What?", "a": "This.", "score": 3, "topic": "t1", "fact": "f", "ref": "R"},
            {"q": "Why?", "a": "Because.", "score": 4.5, "topic": "t2", "fact": "g", "ref": "S"}]
    jl = tmp_path / "d.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in recs) + "\n\n", encoding="utf-8")
    warnings: list[str] = []
    ds = load_table(jl, input_col="q", output_col="a", score_cols={"overall": "score"},
                    group_col="topic", context_col="fact", reference_col="ref", warnings=warnings)
    assert [s.id for s in ds.samples] == ["1", "2"]
    assert ds.samples[1].human["overall"] == 4.5 and ds.samples[0].context == "f"
    assert ds.samples[1].reference == "S" and warnings == []
    js = _write_json(tmp_path / "d.json", recs)
    ds2 = load_table(js, input_col="q", output_col="a", score_cols=["score"], name="mine")
    assert ds2.name == "mine" and len(ds2.samples) == 2
    assert inspect_table(js)[0] == ["q", "a", "score", "topic", "fact", "ref"]


def test_one_group_is_only_a_warning(tmp_path):
    path = _csv(tmp_path / "g.csv", ["in", "out", "s", "grp"], [["x", "y", "1", "G"], ["x", "z", "2", "G"]])
    warnings: list[str] = []
    ds = load_table(path, input_col="in", output_col="out", score_cols=["s"], group_col="grp",
                    warnings=warnings)
    assert len(ds.samples) == 2
    assert len(warnings) == 1 and "one group" in warnings[0] and "g.csv" in warnings[0]
    load_table(path, input_col="in", output_col="out", score_cols=["s"], group_col="grp")  # no list: fine


def test_error_str_format():
    err = DataImportError("'abc' is not a number", file="/tmp/x/my.csv", row=17, column="score")
    assert str(err) == "my.csv, row 17, column 'score': 'abc' is not a number"
    assert isinstance(err, ValueError) and err.file == "/tmp/x/my.csv"
    assert str(DataImportError("the file is empty", file="e.csv")) == "e.csv: the file is empty"


def _bad_csv(tmp_path, rows, name="bad.csv", header=("id", "in", "out", "score")):
    return _csv(tmp_path / name, list(header), rows)


def _load(path, **kw):
    args = dict(input_col="in", output_col="out", score_cols=["score"], id_col="id")
    args.update(kw)
    return load_table(path, **args)


def _raises(path, *parts, **kw) -> DataImportError:
    with pytest.raises(DataImportError) as err:
        _load(path, **kw)
    msg = str(err.value)
    for part in parts:
        assert part in msg, (part, msg)
    return err.value


GOOD = [["1", "x", "y", "3"], ["2", "x", "z", "4"]]


@pytest.mark.parametrize("score, text", [
    ("abc", "'abc' is not a number"),
    ("nan", "not a finite number"),
    ("inf", "not a finite number"),
    ("-Infinity", "not a finite number"),
    ("", "score is empty"),
    ("3,5", "decimal separator"),
])
def test_bad_scores(tmp_path, score, text):
    path = _bad_csv(tmp_path, GOOD + [["3", "x", "w", score]])
    err = _raises(path, "bad.csv", "row 4", "column 'score'", text)
    assert (err.row, err.column) == (4, "score")


def test_score_out_of_range(tmp_path):
    path = _bad_csv(tmp_path, GOOD + [["3", "x", "w", "7"]])
    _raises(path, "bad.csv, row 4, column 'score'", "outside the range 1-5",
            aspect_ranges={"score": (1, 5)})
    _raises(path, "not a score aspect", aspect_ranges={"other": (1, 5)})
    _raises(path, "low < high", aspect_ranges={"score": (5, 1)})


def test_empty_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    _raises(empty, "empty.csv", "empty")
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n \n", encoding="utf-8")
    _raises(blank, "blank.jsonl", "empty")
    header_only = _bad_csv(tmp_path, [], name="header.csv")
    _raises(header_only, "header.csv", "no data rows")
    with pytest.raises(DataImportError, match="empty"):
        inspect_table(empty)


def test_bad_encoding(tmp_path):
    path = _csv(tmp_path / "latin.csv", ["id", "in", "out", "score"],
                [["1", "x", "y", "3"], ["2", "café", "z", "4"]], encoding="latin-1")
    err = _raises(path, "latin.csv", "UTF-8", "line 3")
    assert err.row == 3
    with pytest.raises(DataImportError, match="UTF-8"):
        inspect_table(path)


def test_broken_jsonl_line(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"id": 1, "in": "x", "out": "y", "score": 1}\n'
                    '{"id": 2, "in": "x", "out": "y", "score": 2}\n'
                    '{"id": 3, "in": "x", "out": "y", "score": \n', encoding="utf-8")
    err = _raises(path, "broken.jsonl, row 3", "invalid JSON")
    assert err.row == 3
    bad_json = tmp_path / "broken.json"
    bad_json.write_text('[{"a": 1},\n {"a": 2,,}]', encoding="utf-8")
    err = _raises(bad_json, "broken.json", "invalid JSON on line 2")
    assert err.row is None  # in a JSON list, rows are records; a syntax error has only a line
    not_obj = tmp_path / "scalars.jsonl"
    not_obj.write_text('{"in": "x", "out": "y", "score": 1}\n[1, 2]\n', encoding="utf-8")
    _raises(not_obj, "scalars.jsonl, row 2", "expected a JSON object")


def test_missing_columns(tmp_path):
    path = _bad_csv(tmp_path, GOOD)
    err = _raises(path, "bad.csv", "column 'Score'", "'id', 'in', 'out', 'score'", score_cols=["Score"])
    assert err.column == "Score" and err.row is None
    _raises(path, "column 'output'", output_col="output")
    _raises(path, "column 'grp'", group_col="grp")
    # a JSONL record without a mapped key names its row
    jl = tmp_path / "m.jsonl"
    jl.write_text('{"id": 1, "in": "x", "out": "y", "score": 1}\n{"id": 2, "in": "x", "out": "y"}\n',
                  encoding="utf-8")
    _raises(jl, "m.jsonl, row 2, column 'score'", "missing")


def test_empty_output_duplicate_ids_single_row(tmp_path):
    _raises(_bad_csv(tmp_path, GOOD + [["3", "x", "  ", "2"]], name="e.csv"),
            "e.csv, row 4, column 'out'", "output text is empty")
    _raises(_bad_csv(tmp_path, GOOD + [["1", "x", "w", "2"]], name="dup.csv"),
            "dup.csv, row 4, column 'id'", "duplicate id '1'", "first used on row 2")
    _raises(_bad_csv(tmp_path, GOOD[:1], name="one.csv"), "one.csv", "single row")
    _raises(_bad_csv(tmp_path, GOOD + [["", "x", "w", "2"]], name="noid.csv"),
            "noid.csv, row 4, column 'id'", "id is empty")


def test_ragged_csv_and_bad_suffix(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("id,in,out,score\n1,x,y,3\n2,x,y\n", encoding="utf-8")
    _raises(path, "ragged.csv, row 3", "3 cells but the header has 4")
    trailing = tmp_path / "trailing.csv"
    trailing.write_text("id,in,out,score\n1,x,y,3,,\n2,x,z,4,\n", encoding="utf-8")
    assert len(_load(trailing).samples) == 2
    dup = tmp_path / "dupcol.csv"
    dup.write_text("id,in,out,score,score\n1,x,y,3,4\n", encoding="utf-8")
    _raises(dup, "dupcol.csv, row 1, column 'score'", "two columns")
    odd = tmp_path / "data.xlsx"
    odd.write_bytes(b"PK")
    _raises(odd, "data.xlsx", "unsupported file type")
    _raises(tmp_path / "missing.csv", "missing.csv", "not found")


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_10_mb_text_field_imports(tmp_path, suffix):
    big = "word " * 2_000_000
    path = tmp_path / f"big.{suffix}"
    if suffix == "csv":
        _csv(path, ["id", "in", "out", "score"], [["1", big, "y", "3"], ["2", "x", "z", "4"]])
    else:
        path.write_text(json.dumps({"id": 1, "in": big, "out": "y", "score": 3}) + "\n"
                        + json.dumps({"id": 2, "in": "x", "out": "z", "score": 4}) + "\n", encoding="utf-8")
    assert len(_load(path).samples[0].input) == len(big)


def test_large_csv_streams_with_progress(tmp_path):
    path = tmp_path / "big.csv"
    n = 100_000
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "src", "out", "s1", "s2", "grp"])
        for i in range(n):
            w.writerow([f"r{i}", f"source text {i // 10}", f"output number {i}", i % 5 + 1,
                        (i * 7) % 10 / 2, f"g{i // 10}"])
    calls = []
    ds = load_table(path, input_col="src", output_col="out", score_cols=["s1", "s2"],
                    group_col="grp", id_col="id", progress=lambda d, t: calls.append((d, t)))
    assert len(ds.samples) == n
    assert calls[-1] == (n, n) and len(calls) >= 10
    assert (ds.aspect("s1").low, ds.aspect("s1").high) == (1, 5)
    assert len({s.group_id for s in ds.samples}) == n // 10


# --------------------------------------------------------------------------- dialects, duplicates, control characters


def test_semicolon_file_with_decimal_commas_is_read_and_its_dialect_shown(tmp_path):
    path = tmp_path / "european.csv"
    path.write_text('src;out;score\na;hello;3,5\nb;"well; said";4\nc;fine;1.234,5\n', encoding="utf-8")
    dialect = detect_dialect(path)
    assert dialect == CsvDialect(";", '"', ",")
    assert dialect.describe() == "separator: semicolon, quote: double quote, decimal mark: comma"
    preview = preview_table(path)
    assert preview.columns == ["src", "out", "score"] and preview.dialect == dialect
    assert preview.rows[1]["out"] == "well; said"
    ds = load_table(path, input_col="src", output_col="out", score_cols=["score"])
    assert [s.human["score"] for s in ds.samples] == pytest.approx([3.5, 4.0, 1234.5])
    # the user's override wins: read as comma-separated, the rows no longer fit the header
    with pytest.raises(DataImportError, match="separated by a comma; check the separator"):
        load_table(path, input_col="src", output_col="out", score_cols=["score"], dialect=CsvDialect(","))
    # with a dot as decimal mark, 3,5 is not a number
    with pytest.raises(DataImportError, match="row 2, column 'score': '3,5' is not a number"):
        load_table(path, input_col="src", output_col="out", score_cols=["score"], dialect=CsvDialect(";"))


@pytest.mark.parametrize("content, expected", [
    ("in,out,s\na;b,c;d,1\nx;y,z,2\n", CsvDialect(",", '"', ".")),  # semicolons inside comma cells
    ("in\tout\ts\na,b\tc\t2,5\n", CsvDialect("\t", '"', ",")),
    ("in|out|s\na|b|2.5\n", CsvDialect("|", '"', ".")),
    ("in;out;s\n'a;b';c;2\n'x';y;3\n", CsvDialect(";", "'", ".")),
    ("in;out;s\na;b;2\n", CsvDialect(";", '"', ".")),  # whole numbers: nothing says decimal comma
    ("single\nx\n", CsvDialect(",", '"', ".")),  # one column: the comma default
])
def test_dialect_detection(tmp_path, content, expected):
    path = tmp_path / "f.csv"
    path.write_text(content, encoding="utf-8")
    assert detect_dialect(path) == expected


def test_dialect_rules_and_numbers(tmp_path):
    with pytest.raises(ValueError, match="decimal comma needs a separator other than the comma"):
        CsvDialect(",", '"', ",")
    with pytest.raises(ValueError, match="unknown separator"):
        CsvDialect(":")
    assert parse_number(" 3,5 ", ",") == pytest.approx(3.5)
    assert parse_number("-0,25", ",") == pytest.approx(-0.25)
    assert parse_number("2.5", ",") == pytest.approx(2.5)
    with pytest.raises(ValueError):
        parse_number("3,5")
    js = tmp_path / "f.jsonl"
    js.write_text('{"a": 1}\n', encoding="utf-8")
    assert detect_dialect(js) is None and preview_table(js).dialect is None
    # a comma-separated file says why "3,5" is not read
    bad = tmp_path / "c.csv"
    bad.write_text('a,b,s\nx,y,"3,5"\nx,z,1\n', encoding="utf-8")
    with pytest.raises(DataImportError, match="decimal comma is read in files whose cells are separated"):
        load_table(bad, input_col="a", output_col="b", score_cols=["s"])


def test_large_file_reads_fast_with_detection(tmp_path):
    import time

    path = tmp_path / "big.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter=";")
        w.writerow(["src", "out", "score"])
        for i in range(50_000):
            w.writerow([f"source {i // 5}, with a comma", f"output {i}", f"{i % 5},5"])
    start = time.perf_counter()
    ds = load_table(path, input_col="src", output_col="out", score_cols=["score"])
    assert len(ds.samples) == 50_000 and ds.samples[3].human["score"] == pytest.approx(3.5)
    assert time.perf_counter() - start < 20  # 0.4 s here; generous for a loaded machine


DUP_CSV = ("id,in,out,s\n"
           "a,same input,same output,2\n"
           "b,other,text,5\n"
           "c,same input,  same output ,4\n"
           "d,same input,same output,3\n"
           "e,other,text,1\n"
           "f,other,different,3\n")


def test_duplicates_are_reported_with_their_rows_and_kept_apart_by_default(tmp_path):
    path = tmp_path / "dups.csv"
    path.write_text(DUP_CSV, encoding="utf-8")
    assert find_duplicates(path, input_col="in", output_col="out") == [[2, 4, 5], [3, 6]]
    warnings = []
    ds = load_table(path, input_col="in", output_col="out", score_cols=["s"], id_col="id", warnings=warnings)
    assert len(ds.samples) == 6
    assert warnings == [("dups.csv: 2 item(s) appear more than once with the same input and output "
                         "(rows 2, 4, 5; rows 3, 6); kept as separate samples")]


def test_duplicates_merged_on_request_average_scores_and_keep_each_annotator(tmp_path):
    path = tmp_path / "dups.csv"
    path.write_text(DUP_CSV, encoding="utf-8")
    warnings = []
    ds = load_table(path, input_col="in", output_col="out", score_cols={"q": "s"}, id_col="id",
                    warnings=warnings, duplicates="merge")
    assert [s.id for s in ds.samples] == ["a", "b", "f"]
    a, b, f = ds.samples
    assert a.human["q"] == pytest.approx(3.0) and a.annotators == {"q": [2.0, 4.0, 3.0]}
    assert a.metadata == {"merged_rows": [2, 4, 5], "merged_ids": ["a", "c", "d"]}
    assert b.human["q"] == pytest.approx(3.0) and b.annotators == {"q": [5.0, 1.0]}
    assert f.annotators == {} and f.human["q"] == pytest.approx(3.0)
    assert "merged into one sample each" in warnings[0]
    with pytest.raises(ValueError, match="duplicates must be one of"):
        load_table(path, input_col="in", output_col="out", score_cols=["s"], duplicates="drop")


def _write_all_kinds(tmp_path, rows: list[dict]) -> list[Path]:
    cols = list(rows[0])
    out = []
    for kind, delim in (("csv", ","), ("tsv", "\t")):
        p = tmp_path / f"ctl.{kind}"
        with open(p, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, delimiter=delim)
            w.writerow(cols)
            w.writerows([[r[c] for c in cols] for r in rows])
        out.append(p)
    jl = tmp_path / "ctl.jsonl"
    jl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    js = tmp_path / "ctl.json"
    js.write_text(json.dumps(rows), encoding="utf-8")
    return out + [jl, js]


def test_control_characters_are_stripped_with_a_warning_naming_the_rows_in_every_format(tmp_path):
    rows = [{"in": "plain input", "out": "clean\tline\nnext", "s": 3},
            {"in": "nul\x00inside", "out": "bell\x07 and escape\x1b[31m", "s": 4},
            {"in": "ok", "out": "fine", "s": 2},
            {"in": "del\x7f", "out": "c1\x85 control", "s": 5}]
    results = []
    for path in _write_all_kinds(tmp_path, rows):
        warnings = []
        ds = load_table(path, input_col="in", output_col="out", score_cols=["s"], warnings=warnings)
        texts = [(s.input, s.output) for s in ds.samples]
        assert texts == [("plain input", "clean\tline\nnext"), ("nulinside", "bell and escape[31m"),
                         ("ok", "fine"), ("del", "c1 control")], path.name
        warning = next(w for w in warnings if "control characters" in w)
        # CSV/TSV rows are lines (header = line 1, the first record spans lines 2-3), JSONL rows are lines,
        # a JSON list's are record numbers
        expected_rows = "4, 6" if path.suffix in (".csv", ".tsv") else "2, 4"
        assert f"2 row(s): {expected_rows} " in warning and "'in'" in warning and "'out'" in warning, warning
        results.append(texts)
        preview = preview_table(path)
        assert preview.rows[1]["in"] == "nulinside" and preview.warnings
    assert all(r == results[0] for r in results)

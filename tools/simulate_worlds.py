"""Run `bench simulate` on many worlds, one process per world, and pool the worlds into one table (issue 51).

A world at the benchmark's default sizes takes half a minute to several minutes on two shared cores, so 30 worlds
are an hour-long job. Each world is its own `python -m judge_engine.bench --out DIR/sSEED simulate --seed-list
SEED` run, so a stopped job resumes where it was (a world with its `simulate.json` is not run again) and two sets
can run side by side. The pooled table is `simulate.summarise` over every finished world, the same rows and
paired intervals `bench simulate` prints for the worlds in one process:

    .venv/bin/python tools/simulate_worlds.py --dir /tmp/w30 --first 1000 --count 30 --jobs 2
    .venv/bin/python tools/simulate_worlds.py --dir /tmp/w30 --first 1000 --count 30 --merge-only \
        --replicate-first 5000

Writes DIR/pooled-FIRST-LAST.json (rows, config, per-world seconds) and .md (the Markdown table). With
``--replicate-first`` it pools a second, disjoint range of as many worlds and writes DIR/replication.md: each
claim's paired difference on both sets and whether it resolved on each (the interval excludes 0 on the method's
side) and so replicated. Exit 0 when every world of the range(s) has finished, 1 when some have not (the tables are
then over those that have), 2 on bad options.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def world_dir(base: Path, seed: int) -> Path:
    return base / f"s{seed}"


def run_world(base: Path, seed: int, extra: list[str]) -> tuple[int, int, float]:
    """One world in its own process; (seed, return code, seconds). A finished world is not run again."""
    out = world_dir(base, seed)
    if (out / "simulate.json").exists():
        return seed, 0, 0.0
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "judge_engine.bench", "--out", str(out), "simulate", "--seed-list", str(seed),
           *extra]
    with open(out / "stdout.txt", "w", encoding="utf-8") as log:
        code = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    return seed, code, time.perf_counter() - start


def pooled(base: Path, seeds: list[int]) -> dict:
    """Every finished world's per-seed results of the range, summarised together."""
    from judge_engine.bench import simulate

    per_seed, configs, missing = [], [], []
    for seed in seeds:
        path = world_dir(base, seed) / "simulate.json"
        if not path.exists():
            missing.append(seed)
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        per_seed.extend(doc["per_seed"])
        # not "malformed": before 2026-11-29 the config held the count of malformed replies there, not the fraction
        configs.append({k: doc["config"].get(k) for k in ("n_train", "n_test", "dials", "params", "methods",
                                                          "free_text")})
    if any(c != configs[0] for c in configs[1:]):
        raise SystemExit(f"the worlds under {base} were run with different options; pool only like with like")
    rows = simulate.summarise(per_seed)
    return {"worlds": [e["seed"] for e in per_seed], "missing": missing,
            "config": configs[0] if configs else {}, "rows": rows,
            "seconds": {e["seed"]: e["seconds"] for e in per_seed}}


def replication(first: list[dict], second: list[dict]) -> str:
    """Each claim (method, measure, baseline) of the first set beside the second's, as a Markdown table: its paired
    difference on each set and whether it resolved there, and whether it replicated (resolved on both)."""
    other = {(r["method"], r["measure"], r["baseline"]): r for r in second}
    lines = ["| method | measure | baseline | first set: difference [95% CI] | resolved | second set | resolved | "
             "replicated |", "|---|---|---|---|---|---|---|---|"]
    for r in first:
        twin = other.get((r["method"], r["measure"], r["baseline"]))
        here = r["beats_baseline"] == "yes"
        there = twin is not None and twin["beats_baseline"] == "yes"
        verdict = {(True, True): "yes", (True, False): "no: resolved on the first set only",
                   (False, True): "no: resolved on the second set only",
                   (False, False): "not resolved on either"}[(here, there)]
        lines.append(f"| {r['method']} | {r['measure']} | {r['baseline']} | {r['difference']} | "
                     f"{'yes' if here else 'no'} | {twin['difference'] if twin else 'not run'} | "
                     f"{'yes' if there else 'no'} | {verdict} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, type=Path, help="folder of one sub-folder per world")
    parser.add_argument("--first", required=True, type=int, help="seed of the first world")
    parser.add_argument("--count", required=True, type=int, help="how many worlds")
    parser.add_argument("--jobs", type=int, default=1, help="worlds run at once (one process each)")
    parser.add_argument("--merge-only", action="store_true", help="pool the finished worlds, run none")
    parser.add_argument("--replicate-first", type=int, default=None,
                        help="seed of a second, disjoint range of --count worlds to run and compare claim by claim")
    args, extra = parser.parse_known_args(argv)
    if args.count < 1 or args.first < 0 or args.jobs < 1:
        parser.error("--count and --jobs need at least 1 and --first a seed from 0")
    ranges = [list(range(args.first, args.first + args.count))]
    if args.replicate_first is not None:
        second = list(range(args.replicate_first, args.replicate_first + args.count))
        if args.replicate_first < 0 or set(second) & set(ranges[0]):
            parser.error(f"--replicate-first {args.replicate_first}: the second range must be seeds from 0 that "
                         f"share no world with {ranges[0][0]}-{ranges[0][-1]}")
        ranges.append(second)
    if not args.merge_only:
        with ThreadPoolExecutor(args.jobs) as pool:
            todo = [s for seeds in ranges for s in seeds]
            for seed, code, seconds in pool.map(lambda s: run_world(args.dir, s, extra), todo):
                state = "done" if code == 0 else f"failed (exit {code}, see {world_dir(args.dir, seed)})"
                print(f"world {seed}: {state} in {seconds:.0f} s", flush=True)
    from judge_engine.bench import simulate

    docs, missing = [], []
    for seeds in ranges:
        doc = pooled(args.dir, seeds)
        name = f"pooled-{seeds[0]}-{seeds[-1]}"
        numbers = [{"method": r["method"], "measure": r["measure"], "baseline": r["baseline"], **r["numbers"]}
                   for r in doc["rows"]]
        rows = [{k: v for k, v in r.items() if k != "numbers"} for r in doc["rows"]]
        (args.dir / f"{name}.json").write_text(json.dumps({**doc, "rows": rows, "numbers": numbers}, indent=1),
                                               encoding="utf-8")
        table = simulate.markdown(doc)
        (args.dir / f"{name}.md").write_text(table + "\n", encoding="utf-8")
        print(table)
        print(f"{len(doc['worlds'])} of {len(seeds)} worlds pooled" +
              (f"; not finished: {doc['missing']}" if doc["missing"] else ""))
        docs.append(doc)
        missing += doc["missing"]
    if len(docs) == 2:
        table = replication(docs[0]["rows"], docs[1]["rows"])
        (args.dir / "replication.md").write_text(table + "\n", encoding="utf-8")
        print(table)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

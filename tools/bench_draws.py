"""Run the statistical bench tests on several draws and count the passes (issue 51, item 2).

A statistical test asserts a property of a method when it passes whatever the worlds and the method's seed are,
not on one lucky draw. This runs the given tests (by default the two files of them) once per draw
(``JW_BENCH_SEED=k``: world seeds up by 100k, method seeds up by k; tests/bench_draw.py), reads each run's
JUnit XML, and prints, per test, on how many draws it passed, and per asserted row its interval on each draw.

    .venv/bin/python tools/bench_draws.py --out /tmp/draws
    .venv/bin/python tools/bench_draws.py --draws 0 1 2 3 4 -- tests/test_bench_dials.py -k hpss

Exit 0 when every test passed on at least ``--need`` of the draws run, 1 otherwise, 2 on bad options.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TESTS = ["tests/test_bench_dials.py", "tests/test_bench_controls.py"]


def outcomes(junit: Path) -> dict[str, bool]:
    """Each test case of a JUnit XML file and whether it passed (a skip is not a pass)."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        out[name] = not any(child.tag in ("failure", "error", "skipped") for child in case)
    return out


def run_draw(draw: int, pytest_args: list[str], out: Path) -> dict[str, bool]:
    """One pytest run of ``pytest_args`` on ``draw``; its outcomes by test."""
    junit = out / f"draw{draw}.xml"
    env = {**os.environ, "JW_BENCH_SEED": str(draw), "JW_BENCH_LOG": str(out / "intervals.jsonl")}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *pytest_args]
    with open(out / f"draw{draw}.log", "w", encoding="utf-8") as log:
        subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    if not junit.exists():
        raise RuntimeError(f"draw {draw}: pytest wrote no {junit.name}; see {out / f'draw{draw}.log'}")
    return outcomes(junit)


def report(results: dict[int, dict[str, bool]], intervals: Path, need: int) -> tuple[str, bool]:
    """The pass counts per test and the intervals per asserted row, as text; and whether every test met ``need``."""
    tests = sorted({t for r in results.values() for t in r})
    lines, ok = [f"draws run: {sorted(results)}", "", "passes  test"], True
    for t in tests:
        passed = sum(r.get(t, False) for r in results.values())
        ran = sum(t in r for r in results.values())
        ok &= passed >= min(need, ran)
        lines.append(f"{passed}/{ran}     {t}")
    rows: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    if intervals.exists():
        for line in intervals.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            rows[r["test"], r["row"]][r["draw"]] = (f"{r['mean']:+.3g} [{r['low']:+.3g}, {r['high']:+.3g}] "
                                                    f"n={len(r['per_world'])}")
    if rows:
        lines += ["", "asserted intervals (paired difference, 95% t-interval) per draw:"]
        for (test, row), by_draw in sorted(rows.items()):
            lines.append(f"- {test.split('::')[-1]}: {row}")
            lines += [f"    draw {d}: {v}" for d, v in sorted(by_draw.items())]
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draws", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="JW_BENCH_SEED values (0-4)")
    parser.add_argument("--need", type=int, default=4, help="passes each test needs (default 4 of 5)")
    parser.add_argument("--out", default="/tmp/bench_draws", help="folder for the JUnit files, logs and intervals")
    parser.add_argument("pytest_args", nargs="*", help="after --: tests and pytest options (default: the two files)")
    args = parser.parse_args(argv)
    bad = [d for d in args.draws if not 0 <= d <= 4]
    if bad or len(set(args.draws)) < len(args.draws):
        parser.exit(2, f"bench_draws: --draws {' '.join(map(str, args.draws))}: distinct draws from 0 to 4 needed\n")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "intervals.jsonl").unlink(missing_ok=True)
    results = {}
    for d in args.draws:
        results[d] = run_draw(d, args.pytest_args or DEFAULT_TESTS, out)
        print(f"draw {d}: {sum(results[d].values())} of {len(results[d])} passed", flush=True)
    text, ok = report(results, out / "intervals.jsonl", args.need)
    print(text)
    (out / "report.txt").write_text(text + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""``python -m judge_engine.bench SUBCOMMAND``: run one benchmark, print its table, write its JSON.

Examples::

    python -m judge_engine.bench replay --test-size 8 --repeats 3
    python -m judge_engine.bench overhead -n 16 --repeats 5
    python -m judge_engine.bench layout -n 6 -k 4
    python -m judge_engine.bench concurrency -n 32
    python -m judge_engine.bench scale --sizes 1000 10000 100000
    python -m judge_engine.bench alignment --methods direct geval --test-size 8
    python -m judge_engine.bench app
    python -m judge_engine.bench hostile -n 8
    python -m judge_engine.bench structured -n 8 --repeats 2
    python -m judge_engine.bench simulate --seeds 5
    python -m judge_engine.bench rubric-checks
    python -m judge_engine.bench score-scale --items 8000 --levels 16 64 256 --memory-sizes 10000 1000000
    python -m judge_engine.bench first-look --methods hypoeval hpss --repeats 3 --timeout-min 20
    python -m judge_engine.bench prefix-reuse --db data/workbench.db --limit 300 --repeats 2
    python -m judge_engine.bench cpu-build --other /tmp/native-build --repeats 5
    python -m judge_engine.bench verdicts --draws 200 --seed 0 --out verdicts.md
    python -m judge_engine.bench api-speed --levels 4 32 --latency 0.5
    python -m judge_engine.bench estimate-waves --levels 4 32 --latency 0.25
    python -m judge_engine.bench stress-calibration --draws 2000 --e2e-draws 100 --out stress.md
    python -m judge_engine.bench gate --draws 1000 --seed 0
    python -m judge_engine.bench junk-run --dataset summeval --train 12
    python -m judge_engine.bench token-rates --repeats 5
    python -m judge_engine.bench start-up --other /tmp/before --repeats 5
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import latest, table, write

SUBCOMMANDS = {"replay": "replay", "overhead": "overhead", "layout": "layout", "concurrency": "concurrency",
               "scale": "scale", "alignment": "alignment", "app": "app_latency", "hostile": "hostile",
               "structured": "structured", "simulate": "simulate",
               "rubric-checks": "rubric_checks", "score-scale": "score_scale", "first-look": "first_look",
               "prefix-reuse": "prefix_reuse", "cpu-build": "cpu_build", "verdicts": "verdicts",
               "api-speed": "api_speed", "estimate-waves": "estimate_waves", "stress-calibration": "stress_calibration",
               "gate": "gate", "junk-run": "junk_run", "busy-machine": "busy_machine",
               "token-rates": "token_rates", "rubric-split": "rubric_split", "start-up": "start_up"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m judge_engine.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None, help="folder for the JSON results (default: bench/ in the user "
                        "data folder, $XDG_DATA_HOME/judge-workbench/bench; never the package's own folder)")
    sub = parser.add_subparsers(dest="benchmark", required=True)
    for name, module in SUBCOMMANDS.items():
        mod = importlib.import_module(f".{module}", __package__)
        p = sub.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0])
        mod.add_arguments(p)
    args = parser.parse_args(argv)
    mod = importlib.import_module(f".{SUBCOMMANDS[args.benchmark]}", __package__)
    options = {k: v for k, v in vars(args).items() if k not in ("out", "benchmark")}
    try:
        doc = mod.run(**options)
    except (ValueError, KeyError, RuntimeError) as exc:  # bad options, unknown names, a server that cannot start
        parser.exit(2, f"python -m judge_engine.bench {args.benchmark}: {exc}\n")
    previous = latest(doc["benchmark"], args.out)
    if hasattr(mod, "merge") and previous is not None and not options.get("fresh"):
        doc = mod.merge(previous, doc)
    path = write(doc, args.out)
    print(table(doc))
    if hasattr(mod, "markdown"):
        print(mod.markdown(doc))
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

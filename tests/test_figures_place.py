"""Figures live in judge_engine.figures, away from the method code: a run's worker process never loads plotly.

A run is executed by ``python -m judge_engine resume`` (:func:`judge_engine.runs.start_run`); it imports the
engine and every registered method. Plotly is only for the pages, so importing it there would cost each worker
start-up time and memory for nothing. The check runs in a fresh interpreter because this test process has
imported plotly already (other tests, the pages).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

WORKER = """
import sys
import judge_engine.__main__  # the entry point start_run launches
import judge_engine.methods, judge_engine.runs, judge_engine.trust
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.records import Aspect, Dataset, Sample
from judge_engine.runs import RunSpec, create_run, execute_run
from judge_engine.store import Store
from judge_engine.trust import trust_report

# what `resume` does after the imports: execute a run and print its trust report
store = Store(sys.argv[1])
samples = tuple(Sample(id=f"s{i}", input=f"source {i}", output=f"output {i}", group_id=f"g{i}",
                       human={"quality": float(1 + i % 5)})
                for i in range(8))
store.save_dataset(Dataset(name="toy", task="toy task", aspects=(Aspect("quality", 1, 5, "How good."),),
                           samples=samples))
run_id = create_run(store, RunSpec(method="direct", dataset="toy", aspect="quality", train_size=2, test_size=6))
llm = make_llm(LLMConfig(), store=store, backend=FakeBackend(lambda messages, params: "[[3]]"))
execute_run(store, run_id, llm=llm)
trust_report(store, run_id)
print(sorted(judge_engine.methods.METHODS))
print(sorted(m for m in sys.modules if m == "plotly" or m.startswith("plotly.")))
"""


def test_a_worker_process_never_imports_plotly(tmp_path):
    out = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path / "w.db")], cwd=REPO, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    methods, plotly_modules = out.stdout.strip().splitlines()[-2:]
    assert "'hd_eval'" in methods and "'hpss'" in methods, "every method was imported and registered"
    assert plotly_modules == "[]", f"the worker imported plotly: {plotly_modules}"


def test_the_figures_package_holds_every_plotly_import_of_the_engine():
    """Outside judge_engine/figures, no engine module imports plotly (the pages may)."""
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "judge_engine").rglob("*.py")
                 if "figures" not in p.relative_to(REPO / "judge_engine").parts
                 and any(line.lstrip().startswith(("import plotly", "from plotly"))
                         for line in p.read_text(encoding="utf-8").splitlines())]
    assert offenders == []

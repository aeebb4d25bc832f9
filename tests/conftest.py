import os
from pathlib import Path

import pytest

# The app asks a person for a display name once; tests (and the servers they start) work as "user".
os.environ.setdefault("JUDGE_WORKBENCH_USER", "user")
# A run started in a test gets a fresh worker, as before warm workers (judge_engine.standby): each start would
# otherwise keep a warm process for its database, a Python importing everything for nothing in most tests. The tests
# of warm workers set it to 1; `JUDGE_WORKBENCH_STANDBY=1 pytest ...` runs every test with them.
os.environ.setdefault("JUDGE_WORKBENCH_STANDBY", "0")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The public benchmark folder (../shared/data); skips the test if it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"benchmark data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def db(tmp_path, monkeypatch) -> Path:
    """A fresh database file, made the app's default through $JUDGE_WORKBENCH_DB (for AppTests)."""
    path = tmp_path / "workbench.db"
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(path))
    return path


@pytest.fixture
def store(tmp_path):
    """A fresh database file for one test."""
    from judge_engine.store import Store

    return Store(tmp_path / "workbench.db")


@pytest.fixture
def started(monkeypatch) -> list[int]:
    """Run workers are recorded (their run ids, in order), not spawned: no process, no real model."""
    from judge_engine import runs

    calls: list[int] = []
    record = lambda db_path, run_id, **kw: calls.append(run_id)  # noqa: E731
    # launch() looks the worker up in its own module; the pages' resume buttons call the package's name
    monkeypatch.setattr(runs.launching, "start_run", record)
    monkeypatch.setattr(runs, "start_run", record)
    return calls


@pytest.fixture
def tiny_dataset():
    """Twelve samples in four groups over three systems, one aspect on 1-5."""
    from judge_engine.records import Aspect, Dataset, Sample

    samples = tuple(
        Sample(id=f"s{i}", input=f"source text {i // 3}", output=f"output number {i}", group_id=f"g{i // 3}",
               system_id=f"sys{i % 3}", human={"quality": float(1 + (i * 7) % 5)})
        for i in range(12))
    return Dataset(name="tiny", task="toy summarization", aspects=(Aspect("quality", 1, 5, "How good it is."),),
                   samples=samples, natural_level="group", input_label="Article", output_label="Summary")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item (``item.rep_call``) so fixtures can react to failures."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


# --------------------------------------------------------------------------- test tiers
# `make test` runs every test. `make test-fast` deselects the tiers below (-m "not model and not server and not
# browser"): the unit tier runs on scripted LLMs in a few minutes. So that the unit tier stays fast and honest,
# a test that loads the real embedded model without the `model` marker fails in that tier and says so.
# Markers: model (loads the embedded SmolLM2), server (starts a real llama_cpp.server), browser (headless Chromium).

FAST_TIER = "not model and not server and not browser"


def peer_missing() -> str:
    """Why MLflow's MemAlign peer (the ``memalign`` method) cannot run here ("" when it can): DSPy or MLflow's
    alignment API absent (requirements-dev installs both)."""
    import importlib.util

    if importlib.util.find_spec("dspy") is None:
        return "DSPy is not installed (requirements-dev): the memalign peer runs on it"
    if importlib.util.find_spec("mlflow") is None:
        return "MLflow is not installed (requirements-dev): the memalign peer is its alignment"
    return ""


def pytest_collection_modifyitems(config, items):
    missing = peer_missing()
    for item in items:
        if missing and "[memalign" in item.nodeid:  # the contract tests of every registered method
            item.add_marker(pytest.mark.skip(reason=missing))
        path = Path(str(item.fspath)).name
        if path == "test_browser.py":
            item.add_marker(pytest.mark.browser)
        if any(name.startswith("llama_server") for name in getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)


@pytest.fixture(autouse=True)
def _unit_tier_guard(request, monkeypatch):
    """In the unit tier, loading the embedded model is an error naming the missing marker."""
    if request.config.getoption("-m", default="") != FAST_TIER or request.node.get_closest_marker("model"):
        return
    import judge_engine.llm.llamacpp as llamacpp

    def refuse(*args, **kwargs):
        pytest.fail(f"{request.node.nodeid} loads the embedded model: mark it @pytest.mark.model "
                    "(it then runs in `make test`, not in `make test-fast`)", pytrace=False)

    monkeypatch.setattr(llamacpp, "load_model", refuse)


@pytest.fixture(autouse=True)
def _quiet_machine_for_estimates(monkeypatch):
    """Estimates on the embedded model read the machine's other work (runs.embedded_speed.machine_load); tests get a
    quiet machine so an estimate does not depend on what else runs beside them. A test that studies the load
    patches machine_load itself. Nor does one depend on a timing of the model an earlier test's command made in
    this process (runs.model_timing.time_embedded_model): each test starts with none."""
    import os

    import judge_engine.runs.embedded_speed as embedded_speed

    monkeypatch.setattr(embedded_speed, "machine_load", lambda: (os.cpu_count() or 1, 0, "quiet (pinned by the tests)"))
    import judge_engine.runs.model_timing as model_timing

    monkeypatch.setattr(model_timing, "_PROBED", [])


@pytest.fixture
def embedded_missing(monkeypatch):
    """A machine where the embedded model is not installed (an ``app``-only install)."""
    from judge_engine.llm import availability

    real = availability._installed
    monkeypatch.setattr(availability, "_installed", lambda m: False if m in availability.EMBEDDED_PACKAGES else real(m))


@pytest.fixture
def embedded_installed(monkeypatch):
    """A machine where it is (found without importing it, as availability does)."""
    from judge_engine.llm import availability

    real = availability._installed
    monkeypatch.setattr(availability, "_installed", lambda m: True if m in availability.EMBEDDED_PACKAGES else real(m))


@pytest.fixture
def closed_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now: a server that does not answer."""
    from tests.llama_server import free_port

    return free_port()


@pytest.fixture(scope="session")
def mlflow_tracking(tmp_path_factory):
    """A local MLflow tracking store with 40 labelled traces (tests/mlflow_store.py), made once (about 15 s);
    skips the test where mlflow is not installed (``pip install 'judge-workbench[integrations]'``)."""
    pytest.importorskip("mlflow")
    from tests.mlflow_store import make_tracking_store

    return make_tracking_store(tmp_path_factory.mktemp("mlflow"))


@pytest.fixture
def exported_judge_dir(tmp_path, db, tiny_dataset) -> Path:
    """A folder with a fitted ``judge.json`` (direct, on a scripted backend), for the tests that hand a judge file
    to another tool (inspect_ai, DeepEval, promptfoo)."""
    from judge_engine import export
    from judge_engine.runs import RunSpec, create_run, execute_run
    from tests.scripted import fake_llm, schema_responder

    from judge_engine.store import Store

    store = Store(db)
    store.save_dataset(tiny_dataset)
    llm, _ = fake_llm(schema_responder("[[4]]", lambda messages: 4.0), store=store)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=6))
    execute_run(store, run_id, llm=llm)
    (tmp_path / "judge.json").write_text(export.export_judge(store, run_id))
    return tmp_path

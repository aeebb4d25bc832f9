"""The installable package: pyproject.toml in step with the tree and the requirement files, one version, one
console command whose missing extras are named in one line, and a wheel that carries what an installed
``judge-workbench app`` needs."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import judge_engine
from judge_engine import __main__ as cli
from judge_engine import launcher

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _requirements(name: str) -> set[str]:
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")}


def test_every_engine_subpackage_is_in_the_package_list():
    tree = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "judge_engine").rglob("__init__.py")}
    listed = {p for p in PYPROJECT["tool"]["setuptools"]["packages"] if p.startswith("judge_engine")}
    assert tree == listed


def test_the_dependencies_are_the_requirement_files_split_into_core_and_extras():
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    assert set(project["dependencies"]) | set(extras["app"]) | set(extras["local"]) == _requirements(
        "requirements.txt")
    assert set(extras["dev"]) == _requirements("requirements-dev.txt")
    assert set(extras["gpu"]) == _requirements("requirements-gpu.txt")
    assert set(extras["ray"]) <= _requirements("requirements-dev.txt"), "the Ray scoring test needs the ray extra"
    core = " ".join(project["dependencies"]).lower()
    for heavy in ("streamlit", "llama-cpp-python", "vllm", "plotly", "shap", "ray"):
        assert heavy not in core, f"{heavy} belongs to an extra: a library user does not pay for it"


def test_one_version_string():
    assert re.fullmatch(r"\d+\.\d+\.\d+", judge_engine.__version__)
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "judge_engine.__version__"}


def test_version_and_an_unknown_subcommand(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"], prog="judge-workbench")
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"judge-workbench {judge_engine.__version__}"
    with pytest.raises(SystemExit) as info:
        cli.main(["nosuch"], prog="judge-workbench")
    err = capsys.readouterr().err
    assert info.value.code == 2 and "invalid choice: 'nosuch'" in err and "Traceback" not in err


def test_a_missing_extra_is_one_line_naming_it(monkeypatch, capsys):
    def needs_streamlit(args):
        raise ModuleNotFoundError("No module named 'streamlit'", name="streamlit")

    monkeypatch.setattr(cli, "cmd_datasets", needs_streamlit)
    assert cli.main(["datasets"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: this needs the optional dependency 'streamlit', which is not installed: "
                   "pip install 'judge-workbench[app]'")
    for module, extra in (("llama_cpp", "local"), ("vllm", "gpu"), ("shap", "app"), ("ray", "ray")):
        said = launcher.missing_extra(ModuleNotFoundError(module, name=module))
        assert said is not None and f"[{extra}]" in said
    assert launcher.missing_extra(ModuleNotFoundError("x", name="numpy")) is None, "a core dependency is no extra"


def test_the_app_is_served_from_the_clone_it_runs_from():
    assert launcher.app_dir() == ROOT
    assert (launcher.app_dir() / "app.py").is_file()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel ``pip wheel`` builds from this tree (once for the module's tests)."""
    folder = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(folder), str(ROOT)], capture_output=True, text=True, timeout=300)
    if built.returncode != 0 and "No module named setuptools" in built.stderr + built.stdout:
        pytest.skip("setuptools is not installed in this environment")
    assert built.returncode == 0, built.stderr
    (found,) = folder.glob("judge_workbench-*.whl")
    return found


def test_the_wheel_carries_the_documents_and_help_names_their_folder(wheel, tmp_path, monkeypatch, capsys):
    # the README's docs/ links went nowhere for an installed user (issue 62 item 9)
    names = set(zipfile.ZipFile(wheel).namelist())
    docs = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*") if p.is_file()}
    assert docs and {f"judge_workbench_app/{d}" for d in docs} <= names
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert f"Documentation (the README's docs/ links): {ROOT / 'docs'}" in capsys.readouterr().out
    from judge_engine import launcher

    installed = tmp_path / "site-packages" / "judge_workbench_app"
    (installed / "docs").mkdir(parents=True)
    monkeypatch.setattr(launcher, "__file__", str(tmp_path / "site-packages" / "judge_engine" / "launcher.py"))
    monkeypatch.setitem(sys.modules, "judge_workbench_app", type(sys)("judge_workbench_app"))
    sys.modules["judge_workbench_app"].__path__ = [str(installed)]
    assert launcher.docs_dir() == installed / "docs"


def test_the_wheel_carries_the_prompts_the_app_and_the_command(wheel):
    assert wheel.name.startswith(f"judge_workbench-{judge_engine.__version__}-")
    names = set(zipfile.ZipFile(wheel).namelist())
    prompts = {p.name for p in (ROOT / "judge_engine" / "prompts").glob("*.txt")}
    assert prompts and {f"judge_engine/prompts/{p}" for p in prompts} <= names
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").rglob("*.py")}
    assert {"judge_workbench_app/app.py"} | {f"judge_workbench_app/{p}" for p in pages} <= names
    assert not any(n.startswith(("tests/", "data/", "tools/")) for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "judge-workbench = judge_engine.__main__:console" in zipfile.ZipFile(wheel).read(entry).decode()


def test_run_without_the_local_extra_is_one_line_and_makes_no_run(tmp_path, monkeypatch, capsys):
    # it printed the line only after importing the benchmark and leaving run #1 "interrupted" behind
    import importlib.util

    from judge_engine.store import Store

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    db = tmp_path / "w.db"
    code = cli.main(["run", "--method", "direct", "--dataset", "summeval", "--aspect", "coherence", "--db", str(db)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == ("error: this needs the optional dependency 'llama_cpp', which is not installed: "
                                 "pip install 'judge-workbench[local]'")
    assert not db.exists() or Store(db).runs() == []


def test_the_db_help_names_the_file_used_without_db(tmp_path, monkeypatch, capsys):
    from judge_engine import paths

    monkeypatch.setenv("COLUMNS", "400")  # one help line per option: the path is not wrapped
    monkeypatch.delenv("JUDGE_WORKBENCH_DB", raising=False)

    def db_help(*command: str) -> str:
        with pytest.raises(SystemExit):
            cli.main([*command, "--help"])
        return next(line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("--db"))

    assert str(ROOT / "data" / "workbench.db") in db_help("runs")
    # an installed package (no app.py beside it) keeps its database in the user's data folder
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path / "site-packages")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    for command in ("runs", "app", "score"):
        assert str(tmp_path / "share" / "judge-workbench" / "workbench.db") in db_help(command)
    # `datasets import --help` named data/workbench.db whatever the install (issue 62 item 9)
    imported = db_help("datasets", "import")
    assert str(tmp_path / "share" / "judge-workbench" / "workbench.db") in imported and "data/workbench.db" not in imported
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(tmp_path / "mine.db"))
    assert f"{tmp_path / 'mine.db'}, from $JUDGE_WORKBENCH_DB" in db_help("run")


def test_the_wheel_carries_the_license_and_the_apps_settings(wheel):
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert PYPROJECT["project"]["license"] == "MIT" and PYPROJECT["project"]["license-files"] == ["LICENSE"]
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    assert archive.read("judge_workbench_app/.streamlit/config.toml") == \
        (ROOT / ".streamlit" / "config.toml").read_bytes()
    assert not any(n.endswith("secrets.toml") for n in names), "a team's secrets never ship"
    metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_docs_prints_where_each_document_is_and_one_by_name(capsys):
    # the package names no web address (no [project.urls]): the command says where the README's docs/ links are
    assert cli.main(["docs"]) == 0
    out = capsys.readouterr().out
    for path in (ROOT / "docs").glob("*.md"):
        assert f" {path}  (" in out, path
    assert "(Methods)" in out
    assert cli.main(["docs", "methods"]) == 0 and capsys.readouterr().out.strip() == str(ROOT / "docs" / "methods.md")
    assert cli.main(["docs", "docs/data.md"]) == 0 and capsys.readouterr().out.strip() == str(ROOT / "docs" / "data.md")
    assert cli.main(["docs", "no-such"]) == 2
    err = capsys.readouterr().err
    assert "no document named 'no-such'" in err and "methods" in err


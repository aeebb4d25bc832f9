"""In the app, a built-in benchmark that is not downloaded says so, with its source and license and a download
button, on the Datasets page and in the start form: never a red "could not be loaded"."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine.data import fetch

from tests.test_fetch import _serve

APP = Path(__file__).resolve().parents[1] / "app.py"


@pytest.fixture
def empty_data(db, tmp_path, shared_data, monkeypatch) -> Path:
    """An empty data folder and a mirror of ../shared/data to fetch from."""
    server, url = _serve(shared_data)
    monkeypatch.setenv("JUDGE_WORKBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv(fetch.DATA_URL_ENV, url)
    yield tmp_path / "data"
    server.shutdown()
    server.server_close()


def _open(stem: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.switch_page(f"pages/{stem}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _infos(at: AppTest) -> list[str]:
    return [i.value.replace("\\", "") for i in at.info]


def test_a_method_page_offers_the_download_instead_of_an_error(empty_data):
    at = _open("hypoeval")
    assert at.selectbox(key="hypoeval_dataset").value == "summeval"
    assert "summeval (built-in, not downloaded)" in at.selectbox(key="hypoeval_dataset").format_func("summeval")
    assert not at.error, [e.value for e in at.error]
    info = next(i for i in _infos(at) if "summeval is not downloaded" in i)
    assert "tanyuqian/ctc-gen-eval" in info and "license: MIT" in info and "1.3 MB" in info
    assert at.button(key="hypoeval_fetch_summeval").label == "Download summeval (1.3 MB)"


def test_the_datasets_page_downloads_a_benchmark_then_offers_its_import(empty_data, shared_data):
    at = _open("datasets")
    at.selectbox(key="datasets_bench").set_value("sfhot").run()
    assert not at.error and any("sfhot is not downloaded" in i for i in _infos(at))
    assert not any(b.key == "datasets_import_bench" for b in at.button)
    at.button(key="datasets_fetch_bench").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert (empty_data / "sfhot/sfhot.json").read_bytes() == (shared_data / "sfhot/sfhot.json").read_bytes()
    assert any(b.key == "datasets_import_bench" for b in at.button)
    assert not any("sfhot is not downloaded" in i for i in _infos(at))

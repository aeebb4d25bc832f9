"""An API key, typed in the app or set in the environment, never lands in the database, logs, exports or messages."""

from __future__ import annotations

import json
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine import export
from judge_engine.llm import LLMConfig, LLMError
from judge_engine.runs import RunSpec, create_run, execute_run, start_run

SECRET = "sk-proj-SECRET-7f3a9c-never-stored"
APP = Path(__file__).resolve().parents[1] / "app.py"


class _Echo(BaseHTTPRequestHandler):
    """Accepts only SECRET; says in its error message which key it got (servers do that)."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        auth = self.headers.get("Authorization", "")
        if auth != f"Bearer {SECRET}":
            body, status = {"error": {"message": f"Incorrect API key provided: {auth[7:]}"}}, 401
        else:
            body, status = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": "[[4]]"}}],
                            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}, 200
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def url():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def everything_written(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def spec(url: str, env: str = "JW_TEST_KEY") -> RunSpec:
    return RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=4,
                   llm=LLMConfig(backend="openai", base_url=url, model="m", api_key_env=env, max_retries=0))


@pytest.mark.parametrize("warm", [False, True], ids=["fresh worker", "warm worker"])
def test_key_typed_in_the_app_reaches_the_worker_only_through_its_environment(url, store, tiny_dataset, tmp_path,
                                                                             monkeypatch, warm):
    """Also through a warm worker (:mod:`judge_engine.standby`), which is handed the key on its input."""
    from judge_engine.runs.workers import end_standbys, keep_standby

    monkeypatch.delenv("JW_TEST_KEY", raising=False)
    monkeypatch.setenv("JUDGE_WORKBENCH_STANDBY", "1" if warm else "0")
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, spec(url))
    keep_standby(store.path)
    try:
        worker = start_run(store.path, run_id, api_key=SECRET, log_dir=tmp_path / "logs")
        assert ("judge_engine.standby" in worker.args) == warm
        worker.wait(timeout=120)
    finally:
        end_standbys()
    run = store.get_run(run_id)
    assert run["status"] == "finished", run["message"]
    (tmp_path / "judge.json").write_text(export.export_judge(store, run_id))
    store.close()
    assert SECRET.encode() not in everything_written(tmp_path), "not in the database, its WAL, logs or export"


def test_key_from_the_environment_stays_out_of_errors_and_records(url, store, tiny_dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("JW_TEST_KEY", SECRET[:-1] + "X")  # a wrong key: the server's error quotes it
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, spec(url))
    with pytest.raises(LLMError) as info:
        execute_run(store, run_id)
    shown = str(info.value) + "".join(traceback.format_exception(info.value)) + store.get_run(run_id)["message"]
    assert "rejected the API key" in shown and SECRET[:-1] not in shown
    store.close()
    assert SECRET[:-1].encode() not in everything_written(tmp_path)


def element_protos(node) -> list[str]:
    """What each element sends to the browser, except the masked password field that holds the key itself."""
    proto = getattr(node, "proto", None)
    is_password = proto is not None and getattr(proto, "type", None) == getattr(proto, "PASSWORD", object())
    out = [str(proto)] if proto is not None and not is_password else []
    children = getattr(node, "children", None) or {}
    for child in (children.values() if isinstance(children, dict) else children):
        out.extend(element_protos(child))
    return out


def test_key_typed_in_settings_is_not_shown_on_any_page(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(tmp_path / "wb.db"))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("pages/settings.py").run()
    at.selectbox(key="_w_settings_backend").set_value("openai").run()
    at.text_input(key="_w_settings_api_key").set_value(SECRET).run()
    for page in ("pages/home.py", "pages/runs.py", "pages/datasets.py", "pages/compare.py", "pages/settings.py"):
        at.switch_page(page).run()
        assert not at.exception
        rendered = "\n".join(element_protos(at._tree))  # every message sent to the browser for this page
        assert "openai" in rendered and SECRET not in rendered, page
    assert SECRET.encode() not in everything_written(tmp_path)

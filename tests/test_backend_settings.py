"""Settings that stay (issue 62, part 3): kept per database and per signed-in user, never the API key; a first
visit on a backend that works here; a run on a backend that cannot work here refused before it is created."""

from __future__ import annotations

import socket

import pytest

from judge_engine import runs, saved_settings
from judge_engine.llm import LLMConfig, availability
from judge_engine.runs import RunSpec
from judge_engine.store import Store
from tests.llama_server import free_port


# --------------------------------------------------------------------------- what works here


def test_the_embedded_model_missing_is_named_with_the_fix(embedded_missing):
    problem = availability.backend_problem(LLMConfig(backend="llamacpp"))
    assert "not installed" in problem and "Settings" in problem and "llama_cpp" in problem
    assert availability.backend_problem(LLMConfig(backend="llamacpp", model="/no/such.gguf")) is not None


def test_the_embedded_model_installed_passes(embedded_installed):
    assert availability.backend_problem(LLMConfig(backend="llamacpp")) is None


def test_api_openai_com_without_a_key_is_named_and_a_key_from_anywhere_passes():
    config = LLMConfig(backend="openai", model="gpt-4o-mini")
    assert "API key" in availability.backend_problem(config, environ={})
    assert availability.backend_problem(config, api_key="sk-typed", environ={}) is None
    assert availability.backend_problem(config, environ={"OPENAI_API_KEY": "sk-env"}) is None


def test_a_server_nobody_listens_on_is_unreachable_and_a_listening_one_is_not():
    url = f"http://127.0.0.1:{free_port()}/v1"
    problem = availability.backend_problem(LLMConfig(backend="openai", base_url=url), environ={})
    assert "cannot reach" in problem and url in problem and "base URL under Settings" in problem
    assert availability.backend_problem(LLMConfig(backend="openai", base_url=url), reach=False, environ={}) is None
    assert "not an http(s) address" in availability.unreachable("localhost:8000")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert availability.unreachable(f"http://127.0.0.1:{port}/v1") is None


def test_a_first_visit_picks_the_embedded_model_only_where_it_is_installed(embedded_missing):
    assert availability.first_choice({}) == {"backend": "openai", "base_url": ""}
    assert availability.first_choice({"OPENAI_BASE_URL": "http://gpu:8000/v1"}) == {
        "backend": "openai", "base_url": "http://gpu:8000/v1"}


def test_a_first_visit_keeps_the_embedded_model_where_it_is_installed(embedded_installed):
    assert availability.first_choice({"OPENAI_BASE_URL": "http://gpu:8000/v1"})["backend"] == "llamacpp"


# --------------------------------------------------------------------------- refused before it is created


def test_a_run_on_a_backend_that_cannot_work_here_is_refused_before_it_is_created(store, tiny_dataset, started,
                                                                                  embedded_missing):
    store.save_dataset(tiny_dataset)
    for llm in (LLMConfig(backend="llamacpp"),
                LLMConfig(backend="openai", base_url=f"http://127.0.0.1:{free_port()}/v1")):
        spec = RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=0, test_size=4, llm=llm)
        with pytest.raises(ValueError, match="Settings"):
            runs.launch(store, spec, token="t", reach=True)  # the pages try the server's connection
    assert store.runs() == [] and started == []


# --------------------------------------------------------------------------- kept in the store


def test_settings_are_kept_per_database_and_a_user_over_the_database(tmp_path):
    store = Store(tmp_path / "a.db")
    saved_settings.save(store, saved_settings.DATABASE, "settings_backend", "openai", actor="ann")
    saved_settings.save(store, saved_settings.DATABASE, "settings_concurrency_openai", 8)
    saved_settings.save(store, saved_settings.user_scope("Bo@x.org"), "settings_backend", "vllm")
    assert saved_settings.load(store, saved_settings.DATABASE) == {"settings_backend": "openai",
                                                                   "settings_concurrency_openai": 8}
    assert saved_settings.load(store, saved_settings.DATABASE, saved_settings.user_scope("bo@x.org")) == {
        "settings_backend": "vllm", "settings_concurrency_openai": 8}
    saved_settings.save(Store(tmp_path / "a.db"), saved_settings.DATABASE, "settings_backend", "llamacpp")
    assert saved_settings.load(Store(tmp_path / "a.db"), saved_settings.DATABASE)["settings_backend"] == "llamacpp"
    assert saved_settings.load(Store(tmp_path / "b.db"), saved_settings.DATABASE) == {}


def test_an_api_key_is_never_written(tmp_path):
    store = Store(tmp_path / "a.db")
    with pytest.raises(ValueError, match="never in the database"):
        saved_settings.save(store, saved_settings.DATABASE, "settings_api_key", "sk-secret")
    saved_settings.save(store, saved_settings.DATABASE, "settings_api_key_env", "MY_KEY")  # a variable's name
    assert saved_settings.load(store, saved_settings.DATABASE) == {"settings_api_key_env": "MY_KEY"}
    assert b"sk-secret" not in (tmp_path / "a.db").read_bytes()

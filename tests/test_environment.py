"""judge_engine.environment: variables set for a block and restored as they were."""

import os

import pytest

from judge_engine.environment import environment


def test_values_are_set_defaults_only_where_unset_and_all_restored(monkeypatch):
    monkeypatch.setenv("JW_TEST_SET", "before")
    monkeypatch.setenv("JW_TEST_KEPT", "mine")
    monkeypatch.delenv("JW_TEST_NEW", raising=False)
    monkeypatch.delenv("JW_TEST_DEFAULT", raising=False)
    with environment({"JW_TEST_SET": "during", "JW_TEST_NEW": "x"},
                     defaults={"JW_TEST_KEPT": "theirs", "JW_TEST_DEFAULT": "d"}):
        assert os.environ["JW_TEST_SET"] == "during" and os.environ["JW_TEST_NEW"] == "x"
        assert os.environ["JW_TEST_KEPT"] == "mine" and os.environ["JW_TEST_DEFAULT"] == "d"
    assert os.environ["JW_TEST_SET"] == "before" and os.environ["JW_TEST_KEPT"] == "mine"
    assert "JW_TEST_NEW" not in os.environ and "JW_TEST_DEFAULT" not in os.environ


def test_restored_when_the_block_raises(monkeypatch):
    monkeypatch.delenv("JW_TEST_NEW", raising=False)
    with pytest.raises(RuntimeError), environment({"JW_TEST_NEW": "x"}):
        raise RuntimeError("inside")
    assert "JW_TEST_NEW" not in os.environ


def test_a_variable_the_block_sets_itself_is_put_back_when_named(monkeypatch):
    monkeypatch.setenv("JW_TEST_KEPT", "before")
    monkeypatch.delenv("JW_TEST_CHANGED_INSIDE", raising=False)
    with pytest.raises(RuntimeError), environment(restored=("JW_TEST_CHANGED_INSIDE", "JW_TEST_KEPT")):
        os.environ["JW_TEST_CHANGED_INSIDE"] = "set by the block"
        os.environ["JW_TEST_KEPT"] = "changed by the block"
        raise RuntimeError("the block failed")
    assert os.environ["JW_TEST_KEPT"] == "before" and "JW_TEST_CHANGED_INSIDE" not in os.environ


def test_two_threads_do_not_restore_each_others_settings(monkeypatch):
    import threading

    monkeypatch.delenv("JW_TEST_SHARED", raising=False)
    inside, release = threading.Event(), threading.Event()
    seen = []

    def first():
        with environment({"JW_TEST_SHARED": "first"}):
            inside.set()
            release.wait(5)
            seen.append(os.environ.get("JW_TEST_SHARED"))

    def second():
        inside.wait(5)
        with environment({"JW_TEST_SHARED": "second"}):
            seen.append(os.environ.get("JW_TEST_SHARED"))

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    inside.wait(5)
    release.set()
    for t in threads:
        t.join(10)
    assert seen == ["first", "second"], "the second block waits for the first; each sees its own value"
    assert "JW_TEST_SHARED" not in os.environ

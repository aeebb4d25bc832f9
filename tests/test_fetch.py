"""Built-in benchmarks fetched into the data folder (from a local mirror: no internet here), listed, and a user's
file imported from the command line; every failure is one line, exit 2, and leaves what was stored as it was."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

from judge_engine import data
from judge_engine.__main__ import main
from judge_engine.data import benchmarks, fetch
from judge_engine.store import Store


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the test output stays readable
        pass


class _CutHalfway(_Quiet):
    """Promises the whole file (Content-Length) and closes the connection after half of it."""

    def do_GET(self):
        body = (Path(self.directory) / self.path.lstrip("/")).read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        self.close_connection = True


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # a client that stops reading (a fetch refused mid-download) resets the connection; socketserver would print
        # that traceback to stderr, into the output a test reads (a fresh clone's run failed on it, 2026-11-29)
        pass


def _serve(directory: Path, handler=_Quiet):
    server = _QuietServer(("127.0.0.1", 0), functools.partial(handler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def mirror(shared_data, monkeypatch):
    """A web server over ../shared/data, named in $JUDGE_WORKBENCH_DATA_URL."""
    server, url = _serve(shared_data)
    monkeypatch.setenv(fetch.DATA_URL_ENV, url)
    yield url
    server.shutdown()
    server.server_close()


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    """An empty data folder, made the default through $JUDGE_WORKBENCH_DATA."""
    path = tmp_path / "data"
    monkeypatch.setenv(benchmarks.DATA_DIR_ENV, str(path))
    return path


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (partial downloads included) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_registry_records_each_published_file_with_its_size_and_sha256(shared_data):
    for name, spec in data.BENCHMARKS.items():
        source = spec.source
        assert source.license and source.repository.count("/") == 1 and source.files
        assert [f.name for f in source.files] == [spec.file], name
        for f in source.files:
            published = (shared_data / spec.folder / f.name).read_bytes()
            assert (len(published), hashlib.sha256(published).hexdigest()) == (f.size, f.sha256), name
            assert source.url(f) == f"https://raw.githubusercontent.com/{source.repository}/{source.commit}/{f.repo_path}"
        if source.verified:
            assert len(source.commit) == 40, f"{name}: a verified source is pinned to a commit"


def test_listing_says_not_downloaded_then_here_after_a_fetch_from_the_mirror(data_dir, mirror, shared_data, capsys):
    code, out, _ = _run(capsys, "datasets")
    assert code == 0 and f"read from {data_dir}" in out and "JUDGE_WORKBENCH_DATA" in out
    lines = {line.split()[0]: line for line in out.splitlines()[1:] if line and line.split()[0] in data.BENCHMARKS}
    assert set(lines) == set(data.BENCHMARKS)
    assert all("not downloaded" in line for line in lines.values())
    assert "MIT" in lines["summeval"] and "tanyuqian/ctc-gen-eval@eb91566" in lines["summeval"]

    code, out, err = _run(capsys, "datasets", "fetch", "topical_chat", "--quiet")
    assert code == 0, err
    assert f"topical_chat: downloaded from {mirror}" in out
    assert _files(data_dir) == {"topical_chat/topical_chat.json": (shared_data / "topical_chat/topical_chat.json").read_bytes()}
    assert len(data.load_benchmark("topical_chat").samples) == 360

    code, out, _ = _run(capsys, "datasets", "list")
    lines = {line.split()[0]: line for line in out.splitlines()[1:] if line and line.split()[0] in data.BENCHMARKS}
    assert "here" in lines["topical_chat"] and "not downloaded" not in lines["topical_chat"]
    assert "not downloaded" in lines["summeval"]
    code, out, _ = _run(capsys, "datasets", "fetch", "topical_chat", "--quiet")
    assert code == 0 and "topical_chat: already here" in out, "a file already here is not downloaded again"


def test_fetch_all_stores_every_benchmark_as_published(data_dir, mirror, shared_data, capsys):
    code, _, err = _run(capsys, "datasets", "fetch", "--all")
    assert code == 0, err
    assert _files(data_dir) == {f"{s.folder}/{s.file}": (shared_data / s.folder / s.file).read_bytes()
                                for s in data.BENCHMARKS.values()}
    assert data.available_benchmarks() == list(data.BENCHMARKS)


def test_a_modified_file_on_the_mirror_is_refused_and_nothing_stored_changes(data_dir, shared_data, tmp_path,
                                                                             monkeypatch, capsys):
    bad = tmp_path / "bad-mirror"
    shutil.copytree(shared_data / "sfhot", bad / "sfhot")
    shutil.copytree(shared_data / "topical_chat", bad / "topical_chat")
    tampered = bytearray((bad / "sfhot/sfhot.json").read_bytes())
    tampered[100] ^= 1  # same size, one bit changed
    (bad / "sfhot/sfhot.json").chmod(0o644)
    (bad / "sfhot/sfhot.json").write_bytes(bytes(tampered))
    server, url = _serve(bad)
    monkeypatch.setenv(fetch.DATA_URL_ENV, url)
    try:
        assert _run(capsys, "datasets", "fetch", "topical_chat", "--quiet")[0] == 0
        before = _files(data_dir)
        code, out, err = _run(capsys, "datasets", "fetch", "sfhot", "--quiet")
    finally:
        server.shutdown()
        server.server_close()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"{url}/sfhot/sfhot.json is not the published sfhot.json" in err and "sha256" in err
    assert _files(data_dir) == before, "the partial file is removed and the stored benchmark untouched"


def test_a_download_cut_halfway_is_one_message_and_leaves_no_partial_file(data_dir, shared_data, monkeypatch,
                                                                         capsys):
    server, url = _serve(shared_data, _CutHalfway)
    monkeypatch.setenv(fetch.DATA_URL_ENV, url)
    try:
        code, _, err = _run(capsys, "datasets", "fetch", "sfres", "--quiet")
    finally:
        server.shutdown()
        server.server_close()
    size = data.BENCHMARKS["sfres"].source.files[0].size
    assert code == 2 and err.count("\n") == 1
    assert f"the download of {url}/sfres/sfres.json was cut after {size // 2:,} of {size:,} bytes" in err
    assert _files(data_dir) == {}
    assert not data_dir.exists(), "a failed fetch leaves no empty folder it made (issue 62 item 9)"


def test_a_failed_fetch_keeps_a_folder_that_was_there_and_what_it_holds(data_dir, shared_data, monkeypatch,
                                                                         capsys):
    (data_dir / "sfres").mkdir(parents=True)
    (data_dir / "sfres" / "notes.txt").write_text("mine")
    server, url = _serve(shared_data, _CutHalfway)
    monkeypatch.setenv(fetch.DATA_URL_ENV, url)
    try:
        code, _, _ = _run(capsys, "datasets", "fetch", "sfres", "--quiet")
    finally:
        server.shutdown()
        server.server_close()
    assert code == 2 and _files(data_dir) == {"sfres/notes.txt": b"mine"}


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_a_fetched_file_is_readable_by_others_under_the_usual_umask(data_dir, mirror, capsys):
    old = os.umask(0o022)
    try:
        assert _run(capsys, "datasets", "fetch", "sfhot", "--quiet")[0] == 0
    finally:
        os.umask(old)
    # a temporary file is made 0600 and was renamed as it was (issue 62 item 9)
    assert (data_dir / "sfhot" / "sfhot.json").stat().st_mode & 0o777 == 0o644


def test_a_damaged_file_is_listed_as_damaged_named_on_load_and_replaced_on_request(data_dir, mirror, shared_data,
                                                                                    capsys):
    assert _run(capsys, "datasets", "fetch", "hanna", "--quiet")[0] == 0
    path = data_dir / "hanna" / "hanna.json"
    cut = path.read_bytes()[: len(path.read_bytes()) * 3 // 4]  # a copy cut short: invalid JSON near its end
    path.write_bytes(cut)
    code, out, _ = _run(capsys, "datasets")
    line = next(line for line in out.splitlines() if line.startswith("hanna "))
    assert code == 0 and "damaged" in line and " here " not in line
    assert "judge-workbench datasets fetch hanna --replace" in out
    with pytest.raises(data.BenchmarkDamaged) as caught:
        data.load_benchmark("hanna")
    # the cause first (it failed with "invalid JSON on line 12993" alone), then where reading stopped
    said = str(caught.value)
    assert said.startswith(f"{path} is not the published hanna.json: its checksum (sha256) differs"), said
    assert "datasets fetch hanna --replace" in said and said.index("--replace") < said.index("Reading it stopped")
    # without --replace a fetch leaves it as it is; with it the published file is back and the old one kept
    code, _, err = _run(capsys, "datasets", "fetch", "hanna", "--quiet")
    assert code == 2 and "--replace" in err and path.read_bytes() == cut
    code, out, err = _run(capsys, "datasets", "fetch", "hanna", "--quiet", "--replace")
    assert code == 0, err
    assert path.read_bytes() == (shared_data / "hanna" / "hanna.json").read_bytes()
    assert (data_dir / "hanna" / "hanna.json.damaged").read_bytes() == cut
    assert len(data.load_benchmark("hanna").samples) == 1056


def test_an_unreachable_source_names_the_url_and_the_mirror_variable(data_dir, monkeypatch, capsys):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv(fetch.DATA_URL_ENV, f"http://127.0.0.1:{port}/mirror")
    code, _, err = _run(capsys, "datasets", "fetch", "hanna", "--quiet")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"cannot reach http://127.0.0.1:{port}/mirror/hanna/hanna.json" in err
    assert "JUDGE_WORKBENCH_DATA_URL" in err
    assert not data_dir.exists() or _files(data_dir) == {}


def test_without_a_mirror_the_public_url_at_the_pinned_commit_is_tried(data_dir, monkeypatch, capsys):
    monkeypatch.delenv(fetch.DATA_URL_ENV, raising=False)

    def offline(request, timeout):
        raise __import__("urllib.error").error.URLError("no network")

    monkeypatch.setattr(fetch.urllib.request, "urlopen", offline)
    code, _, err = _run(capsys, "datasets", "fetch", "summeval", "--quiet")
    assert code == 2 and err.count("\n") == 1
    assert ("cannot reach https://raw.githubusercontent.com/tanyuqian/ctc-gen-eval/"
            "eb915662cd4f862aef0f8541fe3770c2ba41bb16/data/Explainaboard/summeval_ctc.jsonl (no network)") in err


def test_a_folder_that_cannot_be_written_is_one_message(tmp_path, mirror, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(benchmarks.DATA_DIR_ENV, str(blocker / "data"))
    code, _, err = _run(capsys, "datasets", "fetch", "sfhot", "--quiet")
    assert code == 2 and err.count("\n") == 1 and f"cannot write to {blocker / 'data' / 'sfhot'}" in err
    assert blocker.read_text() == "not a folder"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into a read-only folder anyway")
def test_a_read_only_folder_is_one_message_and_keeps_what_it_holds(data_dir, mirror, capsys):
    assert _run(capsys, "datasets", "fetch", "sfhot", "--quiet")[0] == 0
    before = _files(data_dir)
    (data_dir / "sfres").mkdir()
    (data_dir / "sfres").chmod(0o500)
    try:
        code, _, err = _run(capsys, "datasets", "fetch", "sfres", "--quiet")
    finally:
        (data_dir / "sfres").chmod(0o700)
    assert code == 2 and err.count("\n") == 1 and "cannot write to" in err and "Permission denied" in err
    assert _files(data_dir) == before


def test_a_file_here_that_is_not_the_published_one_is_left_as_it_is(data_dir, mirror, capsys):
    (data_dir / "sfhot").mkdir(parents=True)
    (data_dir / "sfhot/sfhot.json").write_text("[]")
    code, _, err = _run(capsys, "datasets", "fetch", "sfhot", "--quiet")
    assert code == 2 and "is here but is not the published sfhot.json" in err
    assert (data_dir / "sfhot/sfhot.json").read_text() == "[]"


def test_an_unknown_name_or_none_is_refused_before_any_download(data_dir, capsys):
    code, _, err = _run(capsys, "datasets", "fetch", "topical_chat", "nosuch")
    assert code == 2 and "unknown benchmark 'nosuch'" in err and not data_dir.exists()
    code, _, err = _run(capsys, "datasets", "fetch")
    assert code == 2 and "--all" in err


def test_create_run_names_the_fetch_command_until_the_benchmark_is_fetched(data_dir, mirror, tmp_path,
                                                                            monkeypatch, capsys):
    import judge_engine as jw

    monkeypatch.chdir(tmp_path)  # as the README's snippet runs: outside any clone
    store = jw.Store("workbench.db")
    spec = jw.RunSpec(method="direct", dataset="topical_chat", aspect="coherence", train_size=0, test_size=6)
    with pytest.raises(data.DataImportError) as info:
        jw.create_run(store, spec)
    assert "judge-workbench datasets fetch topical_chat" in str(info.value) and "not downloaded" in str(info.value)
    assert not store.has_dataset("topical_chat")
    assert _run(capsys, "datasets", "fetch", "topical_chat", "--quiet")[0] == 0  # the README's documented step
    assert isinstance(jw.create_run(store, spec), int)


def test_the_data_folder_is_the_clone_shared_data_else_the_user_data_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(benchmarks.DATA_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    clone_data = tmp_path / "shared" / "data"
    monkeypatch.setattr(benchmarks, "clone_shared_data", lambda: clone_data)
    assert data.data_dir_origin() == (tmp_path / "xdg" / "judge-workbench" / "data", "the user data folder")
    clone_data.mkdir(parents=True)
    assert data.default_data_dir() == clone_data
    monkeypatch.setenv(benchmarks.DATA_DIR_ENV, str(tmp_path / "mine"))
    assert data.default_data_dir() == tmp_path / "mine"


CSV = "source,summary,score\nan article,a summary,3\nanother article,another summary,4\na third,a third summary,5\n"


def test_datasets_import_uses_the_page_importer_and_says_what_it_imported(tmp_path, capsys):
    path, db = tmp_path / "mine.csv", tmp_path / "w.db"
    path.write_text(CSV)
    argv = ["datasets", "import", str(path), "--input-col", "source", "--output-col", "summary",
            "--score-col", "score", "--range", "score=1:5", "--db", str(db)]
    code, out, err = _run(capsys, *argv, "--name", "mine")
    assert code == 0, err
    assert "as 'mine': 3 rows -> 3 samples, aspects score; no row left out" in out
    stored = Store(db).load_dataset("mine")
    assert [s.output for s in stored.samples] == ["a summary", "another summary", "a third summary"]
    assert (stored.aspects[0].low, stored.aspects[0].high) == (1.0, 5.0)

    code, _, err = _run(capsys, *argv, "--name", "mine")
    assert code == 2 and err.count("\n") == 1 and "already exists" in err
    bad = tmp_path / "bad.csv"
    bad.write_text(CSV.replace(",4\n", ",four\n"))
    code, _, err = _run(capsys, "datasets", "import", str(bad), "--name", "other", "--input-col", "source",
                        "--output-col", "summary", "--score-col", "score", "--db", str(db))
    assert code == 2 and err.count("\n") == 1 and "bad.csv, row 3, column 'score': 'four' is not a number" in err
    assert [r["name"] for r in Store(db).list_datasets()] == ["mine"]
    assert Store(db).load_dataset("mine") == stored


def test_datasets_import_merges_duplicates_and_reads_a_chosen_dialect(tmp_path, capsys):
    path = tmp_path / "eu.csv"
    path.write_text("source;summary;score\na;x;3,5\na;x;4,5\nb;y;2\n")
    code, out, err = _run(capsys, "datasets", "import", str(path), "--name", "eu", "--input-col", "source",
                          "--output-col", "summary", "--score-col", "score", "--duplicates", "merge",
                          "--separator", "semicolon", "--decimal", "comma", "--db", str(tmp_path / "w.db"))
    assert code == 0, err
    assert "3 rows -> 2 samples" in out and "1 duplicate row(s) merged" in out
    assert Store(tmp_path / "w.db").load_dataset("eu").samples[0].human == {"score": 4.0}

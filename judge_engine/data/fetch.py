"""Download a built-in benchmark into the data directory, checked byte for byte against its published sha256.

Each file is streamed into a temporary file in its own folder, its size and sha256 are checked, and only
then is it renamed over the target (an atomic rename on the same file system): a download cut halfway, a
file that is not the published one and a folder that cannot be written to each end in one
:class:`FetchError` with the partial file removed, and nothing already stored is changed.

``$JUDGE_WORKBENCH_DATA_URL`` names a mirror laid out like the data directory (``<base>/<name>/<file>``,
e.g. a web server over a copy of ``../shared/data``), fetched from instead of the public sources: for
machines without access to GitHub, and for tests.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable

from .benchmarks import BENCHMARKS, DATA_DIR_ENV, BenchmarkSpec, _spec, default_data_dir
from .sources import BenchmarkFile

DATA_URL_ENV = "JUDGE_WORKBENCH_DATA_URL"
CHUNK_BYTES = 64 * 1024
TIMEOUT_SECONDS = 30.0
"""Seconds without a byte from the server before a download counts as cut (not the whole download's time)."""

_HINT = (f"offline or blocked? set {DATA_URL_ENV} to a mirror laid out as <base>/<name>/<file>, "
         f"or {DATA_DIR_ENV} to a folder that already holds the benchmarks")


class FetchError(ValueError):
    """A benchmark could not be downloaded; what was stored before is as it was."""


@dataclass(frozen=True)
class Fetched:
    """What :func:`fetch_benchmark` did for one benchmark."""

    name: str
    folder: Path
    downloaded: bool
    """False when every file was already here with the published checksum (nothing was downloaded)."""


@dataclass(frozen=True)
class BenchmarkStatus:
    """One built-in benchmark: where it comes from and whether its files are in the data directory."""

    spec: BenchmarkSpec
    path: Path
    """Where its (first) file is expected."""
    here: bool
    """Every file is here with its published checksum."""
    damaged: tuple[Path, ...] = ()
    """Files here whose bytes are not the published ones (a cut copy, an edit): loading may fail on them."""

    @property
    def name(self) -> str:
        return self.spec.name


def benchmark_status(data_dir: str | os.PathLike | None = None) -> list[BenchmarkStatus]:
    """Every built-in benchmark with whether its files are under ``data_dir`` (default: :func:`default_data_dir`)."""
    base = Path(data_dir) if data_dir is not None else default_data_dir()
    out = []
    for spec in BENCHMARKS.values():
        files = [(base / spec.folder / f.name, f) for f in spec.source.files]
        damaged = tuple(p for p, f in files if p.is_file() and not _intact(p, f))
        out.append(BenchmarkStatus(spec, files[0][0], all(p.is_file() for p, _ in files) and not damaged, damaged))
    return out


_CHECKED: dict[tuple[str, int, int], str] = {}
"""sha256 by (path, size, modification time): a listing checks each file once until it changes."""


def _intact(path: Path, file: BenchmarkFile) -> bool:
    """Whether ``path`` holds ``file``'s published bytes (its size first: a cut file differs without hashing)."""
    try:
        stat = path.stat()
    except OSError:
        return False
    if stat.st_size != file.size:
        return False
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _CHECKED:
        _CHECKED[key] = _sha256(path)
    return _CHECKED[key] == file.sha256


def mirror_url() -> str:
    """The mirror in ``$JUDGE_WORKBENCH_DATA_URL``, or "" (the public sources)."""
    return os.environ.get(DATA_URL_ENV, "").strip()


def file_url(spec: BenchmarkSpec, file: BenchmarkFile, mirror: str = "") -> str:
    """Where ``file`` is fetched from: ``<mirror>/<folder>/<file>``, else its public URL at the pinned commit."""
    if mirror:
        return f"{mirror.rstrip('/')}/{spec.folder}/{file.name}"
    return spec.source.url(file)


def fetch_benchmark(name: str, data_dir: str | os.PathLike | None = None, *, base_url: str | None = None,
                    progress: Callable[[int, int], Any] | None = None,
                    timeout: float = TIMEOUT_SECONDS, replace_damaged: bool = False) -> Fetched:
    """Download built-in benchmark ``name`` into ``data_dir`` (default: :func:`default_data_dir`).

    ``base_url`` is a mirror (default ``$JUDGE_WORKBENCH_DATA_URL``; empty: the public sources).
    ``progress(bytes_done, bytes_total)`` is called as the bytes come in. A file already here with
    the published checksum is not downloaded again; one whose bytes differ is refused, or with
    ``replace_damaged`` downloaded again and kept beside it as ``<file>.damaged`` (nothing is thrown away),
    once the new copy has passed its checks. Raises ValueError for an unknown name and
    :class:`FetchError` (one sentence naming the URL or folder) for everything else.
    """
    spec = _spec(name)
    mirror = mirror_url() if base_url is None else base_url.strip()
    folder = (Path(data_dir) if data_dir is not None else default_data_dir()) / spec.folder
    downloaded = False
    for file in spec.source.files:
        target = folder / file.name
        aside = None
        if target.is_file():
            if _sha256(target) == file.sha256:
                continue
            if not replace_damaged:
                raise FetchError(f"{target} is here but is not the published {file.name} (its sha256 differs); it "
                                 f"was left as it is: fetch {name} again with --replace (it is kept as "
                                 f"{file.name}.damaged), or move it away")
            aside = target.with_name(f"{file.name}.damaged")
        _download(file_url(spec, file, mirror), target, file, progress=progress, timeout=timeout, aside=aside)
        downloaded = True
    return Fetched(name, folder, downloaded)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _file_mode() -> int:
    """The mode an ordinary new file gets under this process's umask (0644 under 022): a temporary file is made
    0600, and renamed as it was a fetched benchmark was unreadable to the machine's other users."""
    mask = os.umask(0o022)  # the only portable way to read it is to set it, so it is put back at once
    os.umask(mask)
    return 0o666 & ~mask


def _new_folders(folder: Path) -> list[Path]:
    """``folder`` and its parents that do not exist yet, deepest first (what a failed fetch must take away)."""
    missing = []
    for path in (folder, *folder.parents):
        if path.exists():
            break
        missing.append(path)
    return missing


def _remove_empty(folders: list[Path]) -> None:
    for path in folders:  # deepest first; one that holds something (another fetch's file) stays
        try:
            path.rmdir()
        except OSError:
            break


def _download(url: str, target: Path, file: BenchmarkFile, *, progress: Callable[[int, int], Any] | None,
              timeout: float, aside: Path | None = None) -> None:
    """``url`` into ``target`` through a temporary file beside it, renamed only once size and sha256 match (the
    file ``target`` held moved to ``aside`` first, when given). A failure leaves no folder it made."""
    response = _open(url, timeout)  # first: an unreachable source leaves no folder behind
    with response:
        folder = target.parent
        made = _new_folders(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            handle = tempfile.NamedTemporaryFile(dir=folder, prefix=f".{file.name}.", suffix=".part", delete=False)
        except OSError as exc:
            _remove_empty(made)
            raise FetchError(f"cannot write to {folder} ({exc.strerror or exc}); set {DATA_DIR_ENV} to a folder "
                             "you can write to") from None
        partial = Path(handle.name)
        try:
            with handle:
                done, digest = _stream(url, response, handle, file, progress=progress)
            if done < file.size:
                raise FetchError(f"the download of {url} was cut after {done:,} of {file.size:,} bytes; nothing "
                                 "was stored: run it again")
            if digest != file.sha256:
                raise FetchError(f"{url} is not the published {file.name}: its sha256 is {digest[:16]}..., "
                                 f"expected {file.sha256[:16]}...; nothing was stored (a mirror in {DATA_URL_ENV} "
                                 "must hold the files as published)")
            os.chmod(partial, _file_mode())
            if aside is not None:
                os.replace(target, aside)
            os.replace(partial, target)
        except BaseException:  # a cut, a wrong file, Ctrl-C: the partial file goes, the target is untouched
            partial.unlink(missing_ok=True)
            _remove_empty(made)
            raise


def _open(url: str, timeout: float) -> Any:
    """The server's response to GET ``url``; a FetchError naming the URL and the mirror variable if there is none."""
    from .. import __version__

    request = urllib.request.Request(url, headers={"User-Agent": f"judge-workbench/{__version__}"})
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        raise FetchError(f"{url} answered HTTP {exc.code} ({exc.reason}); {_HINT}") from None
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        raise FetchError(f"cannot reach {url} ({getattr(exc, 'reason', exc)}); {_HINT}") from None


def _stream(url: str, response: Any, out: BinaryIO, file: BenchmarkFile, *,
            progress: Callable[[int, int], Any] | None) -> tuple[int, str]:
    """Bytes copied from ``response`` to ``out`` and their sha256; a FetchError at more bytes than published."""
    digest = hashlib.sha256()
    done = 0
    while True:
        try:
            chunk = response.read(CHUNK_BYTES)
        except (OSError, http.client.HTTPException):  # reset, timed out or closed early mid-way
            break  # counted as cut by the caller: fewer bytes than published
        if not chunk:
            break
        done += len(chunk)
        if done > file.size:
            raise FetchError(f"{url} is not the published {file.name}: it holds more than its {file.size:,} bytes; "
                             f"nothing was stored (a mirror in {DATA_URL_ENV} must hold the files as published)")
        try:
            out.write(chunk)
        except OSError as exc:
            raise FetchError(f"cannot write {out.name} ({exc.strerror or exc}); nothing was stored") from None
        digest.update(chunk)
        if progress is not None:
            progress(done, file.size)
    return done, digest.hexdigest()

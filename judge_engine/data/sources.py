"""Where each built-in benchmark is published: repository, pinned commit, file paths, license, size, sha256.

The sizes and sha256 sums are those of the files as published (computed from the copies in
``../shared/data``, which are kept as their publishers released them): a download is accepted only
when it has exactly these bytes, so a changed upstream file or a broken mirror is refused rather
than imported.

Paths and commits were looked up in an index of public GitHub repositories, without network
access to GitHub itself (``verified`` says which): for SummEval, Topical-Chat, SF-HOT and SF-RES the
repository listing names the file at the pinned commit and the stored file has exactly as many
characters as ours. For HANNA, Newsroom and WritingPrompt-A no commit holding the file could be
established: their URL names the repository's ``main`` branch and a path read from the repository's
own code (HypoEval-Gen reads ``data_original/newsroom.json`` and ``data_original/wp_a.json``) or
guessed (HPSS); the checksum still guards what is stored, and docs/data.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass

RAW_GITHUB = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class BenchmarkFile:
    """One published file of a built-in benchmark."""

    name: str
    """The file's name in the benchmark's folder of the data directory (e.g. ``summeval_ctc.jsonl``)."""
    repo_path: str
    """Its path in the source repository."""
    size: int
    """Its size in bytes as published."""
    sha256: str
    """The sha256 of its bytes as published (lower-case hex)."""


@dataclass(frozen=True)
class BenchmarkSource:
    """Where a built-in benchmark is published and under which license."""

    repository: str
    """``owner/name`` on GitHub."""
    commit: str
    """The pinned commit (40 hex digits), or ``main`` where no commit could be established (see ``verified``)."""
    license: str
    files: tuple[BenchmarkFile, ...]
    verified: bool
    """Whether the path and commit were checked against the repository's own listing (see the module docstring)."""
    origin: str = ""
    """The study the data comes from."""

    def url(self, file: BenchmarkFile) -> str:
        """The public raw URL of ``file`` at the pinned commit."""
        return f"{RAW_GITHUB}/{self.repository}/{self.commit}/{file.repo_path}"

    @property
    def size(self) -> int:
        """Bytes to download for the whole benchmark."""
        return sum(f.size for f in self.files)

    @property
    def label(self) -> str:
        """``owner/name@abcdef1`` (or ``@main``): the source in a few characters."""
        return f"{self.repository}@{self.commit[:7] if len(self.commit) == 40 else self.commit}"


_CTC = "tanyuqian/ctc-gen-eval"
_CTC_COMMIT = "eb915662cd4f862aef0f8541fe3770c2ba41bb16"
_UNIEVAL = "maszhongming/UniEval"
_UNIEVAL_COMMIT = "9d9b51dc716f40f6b454a4455c7fe2f843aabfbb"
_HYPOEVAL_GEN = "ChicagoHAI/HypoEval-Gen"

SOURCES: dict[str, BenchmarkSource] = {
    "summeval": BenchmarkSource(
        _CTC, _CTC_COMMIT, "MIT", verified=True, origin="SummEval (Fabbri et al., 2021)",
        files=(BenchmarkFile("summeval_ctc.jsonl", "data/Explainaboard/summeval_ctc.jsonl", 1295101,
                             "221625dbc2ec59fe9c03de38313bfe2b4ee32aad34e19570ee836dd0b6f94118"),)),
    "topical_chat": BenchmarkSource(
        _UNIEVAL, _UNIEVAL_COMMIT, "MIT", verified=True, origin="USR (Mehri and Eskenazi, 2020)",
        files=(BenchmarkFile("topical_chat.json", "reproduce/data/dialogue/topical_chat.json", 669279,
                             "f6361daa6fe162f636d2071a60322a784acd770be0bf3a6920ac949d751b978a"),)),
    "sfhot": BenchmarkSource(
        _UNIEVAL, _UNIEVAL_COMMIT, "MIT", verified=True, origin="Novikova et al. (2017)",
        files=(BenchmarkFile("sfhot.json", "reproduce/data/data2text/sfhot.json", 367684,
                             "40f771b4bf47e3dced9c669ea4848a76b950086eba3586205affa0acd67630a8"),)),
    "sfres": BenchmarkSource(
        _UNIEVAL, _UNIEVAL_COMMIT, "MIT", verified=True, origin="Novikova et al. (2017)",
        files=(BenchmarkFile("sfres.json", "reproduce/data/data2text/sfres.json", 506399,
                             "8e024cab8e202d572c554a1f44ee765d74690da008d47dca37e61ee5b5ce093f"),)),
    "hanna": BenchmarkSource(
        # the HPSS repository states no license of its own; HANNA's authors publish their data separately
        "thu-coai/HPSS", "main", "not stated by the source", verified=False, origin="HANNA (Chhun et al., 2022)",
        files=(BenchmarkFile("hanna.json", "data/hanna/hanna.json", 1774825,
                             "cbb9c75e830902c3818b128ae2814ed9e5256283117d8a66232cdd066af30991"),)),
    "newsroom": BenchmarkSource(
        _HYPOEVAL_GEN, "main", "MIT", verified=False, origin="Newsroom (Grusky et al., 2018)",
        files=(BenchmarkFile("newsroom.json", "data_original/newsroom.json", 2058421,
                             "8a9477fccd46a3785ba753d1e9ed2f362cd545c7c8b7bbf2ab4f2204f120a6ac"),)),
    "writingprompt_a": BenchmarkSource(
        _HYPOEVAL_GEN, "main", "MIT", verified=False, origin="WritingPrompt-A (Chiang and Lee, 2023)",
        files=(BenchmarkFile("wp_a.json", "data_original/wp_a.json", 449429,
                             "1b1ab35d1c39f58f5d74676d8c879b00cb435941c0e20c09f088017896825089"),)),
}
"""Benchmark name -> where it is published (see :data:`judge_engine.data.BENCHMARKS`)."""

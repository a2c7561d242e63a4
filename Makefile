# gpuviz: one command to set up and run, one to set up and test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)  ## set everything up and open the app
	$(BIN)/gpuviz

lint: $(STAMP)
	$(BIN)/ruff check gpuviz tests benchmarks
	$(BIN)/lint-imports

test: $(STAMP) lint  ## set everything up and run the tests
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest

bench: $(STAMP)  ## update + repaint latency, frame rate and start-up time
	QT_QPA_PLATFORM=offscreen $(BIN)/python benchmarks/latency.py

clean:
	rm -rf $(VENV) build dist *.egg-info

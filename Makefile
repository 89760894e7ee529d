# Every target bootstraps .venv itself, so a fresh clone needs nothing else.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
TASK ?= Write one sentence about a dog in a park using the words: dog, frisbee, park, catch.
REFERENCE ?= {"concepts": ["dog", "frisbee", "park", "catch"]}

.PHONY: run test lint studio bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(BIN)/self-refine run "$(TASK)" --model offline --profile constrained_generation \
		--reference '$(REFERENCE)'

lint: $(STAMP)
	$(BIN)/ruff check self_refine tests benchmarks
	$(BIN)/ruff format --check self_refine tests benchmarks
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .self-refine .mypy_cache .ruff_cache .pytest_cache

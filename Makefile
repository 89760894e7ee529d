# Every target bootstraps .venv itself, so a fresh clone needs nothing else.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
# Lint what exists: benchmarks/ may not be there yet.
LINT_PATHS := self_refine tests docs/hooks examples .ci $(wildcard benchmarks)
TASK ?= Write one or two natural sentences that use all of these words: train, pencil, compass, river.
REFERENCE ?= {"concepts": ["train", "pencil", "compass", "river"]}
# The model `make run` uses: the embedded local model (built and fetched on first use),
# or MODEL=offline (the deterministic stand-in, nothing to build), or any model string.
MODEL ?= local
# Replies sampled at once per draft step, the verifier picking one: with the local 0.5B
# model one greedy draft of the default task misses a word and refinement of that one
# draft rarely fixes it, while one of four samples passes (benchmarks/results/quality-latest.md).
CANDIDATES ?= 4
# The strategy is the run's default (the strategy setting's "auto", which the run names on
# stderr): the default task comes with its concept check, so its steps are fresh drafts
# until one is verified (sample); with MODEL=offline, whose drafts never differ, and for a
# TASK of your own (the model critiquing), the refine loop. STRATEGY=... names one.
STRATEGY ?=
ifeq ($(origin TASK),file)
RUN_OPTIONS := --profile constrained_generation --reference '$(REFERENCE)'
endif
RUN_OPTIONS += $(if $(STRATEGY),--strategy $(STRATEGY))
RUN_NEEDS := $(if $(filter local local:%,$(MODEL)),$(VENV)/.installed-local,$(VENV)/.installed-run)

.PHONY: run test lint deps-check studio bench bench-quality bench-budget bench-training docs clean local-runtime

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The verifiers extra (jsonschema) too: `--response-format` and the json_schema verifier work.
$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[verifiers]"
	touch $@

# llama-cpp-python has no binary wheel: pip compiles llama.cpp (portable build) once.
$(VENV)/.installed-local: pyproject.toml | $(BIN)/python
	@echo "Installing the local model's runtime, llama-cpp-python. The first time, pip compiles"
	@echo "llama.cpp: about 7 minutes on 2 cores (pip keeps the wheel, so later installs are quick)."
	CMAKE_ARGS="$${CMAKE_ARGS:--DGGML_NATIVE=OFF}" $(BIN)/python -m pip install --quiet -e ".[local,verifiers]"
	touch $@ $(VENV)/.installed-run

# The fix when the local model's runtime crashes (self-refine says so): llama-cpp-python
# compiled again, portable (no instructions of this CPU alone), never taken from pip's wheel
# cache, which may hold a native build of an earlier install. About 7 minutes on 2 cores.
LLAMA_REQUIREMENT := $(shell sed -n 's/^local = \["\(.*\)"\]$$/\1/p' pyproject.toml)
local-runtime: | $(BIN)/python
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/python -m pip install --no-cache-dir --force-reinstall \
		--no-deps "$(LLAMA_REQUIREMENT)"
	touch $(VENV)/.installed-local

# The training extra's torch, installed before the extras so that their `torch>=` is already met:
# the CPU build (190 MB; pip's find-links carry it on the project's machines) instead of the
# default build's CUDA libraries (several GB). Elsewhere, point pip at PyTorch's CPU wheel index:
# make TORCH="torch==2.13.0 --index-url URL"; on a GPU machine, TORCH= keeps the torch you have.
TORCH ?= torch==2.13.0

$(STAMP): pyproject.toml | $(BIN)/python
	@echo "Installing the development extras (llama-cpp-python among them: the first time pip"
	@echo "compiles llama.cpp, about 7 minutes on 2 cores)."
	$(if $(TORCH),$(BIN)/python -m pip install --quiet $(TORCH))
	CMAKE_ARGS="$${CMAKE_ARGS:--DGGML_NATIVE=OFF}" $(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@ $(VENV)/.installed-run $(VENV)/.installed-studio $(VENV)/.installed-local

$(VENV)/.installed-studio: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[studio,verifiers]"
	touch $@ $(VENV)/.installed-run

run: $(RUN_NEEDS)
	$(BIN)/self-refine run "$(TASK)" --model $(MODEL) --candidates $(CANDIDATES) $(RUN_OPTIONS)

# LangGraph Studio on a free port of 127.0.0.1, offline model unless SELF_REFINE_MODEL says otherwise.
# SELF_REFINE_MODEL=local (or local:NAME, local:PATH.gguf) also installs the local extra and
# fetches the model first, with progress, so that no Studio run waits on a silent download.
STUDIO_LOCAL := $(filter local local:%,$(SELF_REFINE_MODEL))
studio: $(VENV)/.installed-studio $(if $(STUDIO_LOCAL),$(VENV)/.installed-local)
ifneq ($(STUDIO_LOCAL),)
	@$(BIN)/python -c "import sys; from self_refine.models.fetch import local_model_path; \
	print('local model:', local_model_path(sys.argv[1]))" '$(STUDIO_LOCAL)'
endif
	$(BIN)/self-refine studio

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy

# The core tests in fresh venvs, `pip install .` of the project: with the newest releases the
# package index resolves, and with each core dependency at its lower bound in pyproject.toml.
deps-check: | $(BIN)/python
	$(BIN)/python .ci/dependency_check.py newest lowest

test: lint deps-check
	$(BIN)/pytest

# Performance figures: writes benchmarks/results/latest.{json,md} and the table in
# benchmarks/README.md (a few minutes; not part of `make test`).
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

# Does refinement help? Six conditions over the bundled task sets, judged by exact checkers;
# writes benchmarks/results/quality-*.{json,md,png,records.jsonl}. QUALITY_OPTIONS="--model NAME
# --base-url URL" measures another model (about 40-60 minutes with the local model on 2 cores).
QUALITY_OPTIONS ?= --model local
bench-quality: $(STAMP)
	$(BIN)/python -m benchmarks.quality.run $(QUALITY_OPTIONS)

# How to spend a token budget: sample, refine, refine+candidates and search at 1x-8x the
# tokens of each item's first draft; writes benchmarks/results/budget-*.{json,md,png,records.jsonl}
# (hours per model on 2 cores: see the quality guide). BUDGET_OPTIONS="--model NAME" for another.
BUDGET_OPTIONS ?= --model local
bench-budget: $(STAMP)
	$(BIN)/python -m benchmarks.quality.spend $(BUDGET_OPTIONS)

# Self-Refine in a GRPO trainer with the local 0.5B model: refine batching against one batched
# generate, the on-policy gap of the training forms, GRPO steps against plain rollouts; writes
# benchmarks/results/training-cpu.{md,json} (over an hour on 2 cores with STEPS=3).
STEPS ?= 3
bench-training: $(STAMP)
	$(BIN)/python -m benchmarks.training.run --steps $(STEPS)

# The documentation site in site/ (guides, CLI and API reference); `make test` builds it too.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) site .self-refine .mypy_cache .ruff_cache .pytest_cache

# `make demo` and `make test` set everything up on first use: a .venv with pdyn and its needs.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench fuzz clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned to the CPU build on this machine's disk (plain `torch` pulls a multi-GB CUDA build)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(PY) -m pytest tests

bench: $(STAMP)
	$(PY) benchmarks/overhead.py

# differential fuzzing against eager; reduced failures go to fuzz_failures/
fuzz: $(STAMP)
	$(PY) -m tests.fuzz --backend eager --count 10000 --seed 0
	$(PY) -m tests.fuzz --backend triton --count 1000 --seed 0

clean:
	rm -rf $(VENV) .pytest_cache

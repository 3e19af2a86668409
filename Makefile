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

# the second run: z3 checks every symbolic size step of the shape, view and size-arithmetic tests,
# the model suite and a size-fuzz slice (PDYN_TRANSLATION_VALIDATION=1; docs/correctness.md)
VALIDATED_TESTS := tests/ops/test_shape_rules_views.py tests/ops/test_shape_rules.py tests/shapes/test_symbolic_shapes.py \
	tests/e2e/test_never_wrong_size_arith.py tests/e2e/test_never_wrong_sizes.py tests/models/test_models.py \
	tests/fuzz/test_fuzz_sizes.py

# one worker per core (pytest-xdist): the suite runs Triton's interpreter and is CPU-bound
test: $(STAMP)
	$(PY) -m pytest -n auto tests
	PDYN_TRANSLATION_VALIDATION=1 $(PY) -m pytest -n auto -q $(VALIDATED_TESTS)

bench: $(STAMP)
	$(PY) benchmarks/overhead.py

# differential fuzzing against eager; reduced failures go to fuzz_failures/
fuzz: $(STAMP)
	$(PY) -m tests.fuzz --backend eager --count 10000 --seed 0
	$(PY) -m tests.fuzz --backend triton --count 1000 --seed 0
	$(PY) -m tests.fuzz --kind sizes --backend eager --count 2000 --seed 0

clean:
	rm -rf $(VENV) .pytest_cache

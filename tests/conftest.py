"""Shared test setup: every test starts with pdyn's caches and counters empty; hypothesis draws the
same examples on every run (HYPOTHESIS_PROFILE=explore draws new ones, to look for bugs); shape
rules are checked against the fake run at every op (PDYN_CHECK_HINTS)."""

import contextlib
import os

# every shape rule's sizes must equal the fake run's at the call's sizes (else an error, not a
# silent specialization); read by pdyn's Config, so set before pdyn is imported
os.environ.setdefault("PDYN_CHECK_HINTS", "1")

import pytest  # noqa: E402
import torch
from hypothesis import settings

import pdyn

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


# files that also run under translation validation (z3 checks every symbolic step): CI's share of it
VALIDATED = {"test_dynamic_shapes.py", "test_never_wrong_sizes.py", "test_data_dependent.py",
             "test_never_wrong_guards.py", "test_symbolic_shapes.py"}
try:
    import z3  # noqa: F401
    HAVE_Z3 = True
except ImportError:
    HAVE_Z3 = False


@pytest.fixture(autouse=True)
def fresh_pdyn(request):
    pdyn.reset()
    torch.manual_seed(0)
    validate = HAVE_Z3 and request.node.path.name in VALIDATED
    with pdyn.config.patch(translation_validation=True) if validate else contextlib.nullcontext():
        yield
    pdyn.reset()

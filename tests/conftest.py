"""Shared test setup: every test starts with pdyn's caches and counters empty; hypothesis draws the
same examples on every run (HYPOTHESIS_PROFILE=explore draws new ones, to look for bugs)."""

import os

import pytest
import torch
from hypothesis import settings

import pdyn

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture(autouse=True)
def fresh_pdyn():
    pdyn.reset()
    torch.manual_seed(0)
    yield
    pdyn.reset()

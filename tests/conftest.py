"""Shared test setup: every test starts with pdyn's caches and counters empty."""

import pytest
import torch

import pdyn


@pytest.fixture(autouse=True)
def fresh_pdyn():
    pdyn.reset()
    torch.manual_seed(0)
    yield
    pdyn.reset()

"""Batch 1 first (issue 31): each model over batch 1..7, starting at batch 1, with the eager
backend compiles ONCE (a dim first seen as 1 is a symbol in [1, inf); none of these models branches
on the batch), and every call equals eager."""

from __future__ import annotations

import copy

import pytest
import torch

import pdyn
from model_suite.cases import CASES, WIDE
from tests.models.harness import assert_close_outputs

CALLS = [(1, 16), (2, 16), (3, 7), (4, 33), (5, 16), (6, 7), (7, 33)]
MODELS = {**CASES, **{case.name: case for case in WIDE}}


@pytest.mark.parametrize("name", ["gpt2", "llama", "t5", "vit"])
def test_batch_one_first_compiles_once(name):
    pdyn.reset()
    torch.manual_seed(0)
    case = MODELS[name]
    model = case.build().eval()
    eager = copy.deepcopy(model)
    optimized = pdyn.optimize(model, backend="eager")
    for number, (batch, seq) in enumerate(CALLS):
        kwargs = case.inputs(batch, seq, number)
        with torch.no_grad():
            expected = eager(**copy.deepcopy(kwargs))
            actual = optimized(**copy.deepcopy(kwargs))
        assert_close_outputs(actual, expected, f"call {number} (batch {batch}, seq {seq})")
    stats = pdyn.stats()
    assert (stats["compiles"], stats["graph_breaks"], stats["eager_fallbacks"]) == (1, 0, 0), stats

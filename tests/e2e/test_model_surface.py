"""Python and torch surface seen in MoE, state-space and vision models: shape rules for
`Tensor.unfold`, `F.one_hot`, `torch.histc` (one compile across sizes), `isinstance(x, np.ndarray)`
and `torch._C._get_tracing_state()` answered at trace time (no break), and a list or tuple repeated
by a symbolic int (traced, the count a value read)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import pdyn
from tests.helpers import check_calls

pytestmark = pytest.mark.filterwarnings("error:pdyn")


def windows(x):
    return x.unfold(1, 3, 2).sum(-1)


def classes(idx):
    return F.one_hot(idx, 6).float().sum(0)


def histogram(x):
    return torch.histc(x, bins=5, min=-1, max=1) + x.sum()


@pytest.mark.parametrize("fn,calls", [
    (windows, [(torch.randn(2, 7),), (torch.randn(4, 9),), (torch.randn(3, 12),)]),
    (classes, [(torch.tensor([0, 1, 2]),), (torch.tensor([0, 1, 2, 5, 4]),), (torch.tensor([3, 3, 1, 0]),)]),
    (histogram, [(torch.randn(7),), (torch.randn(9),), (torch.randn(12),)]),
])
def test_shape_rules_compile_once_across_sizes(fn, calls):
    pdyn.reset()
    check_calls(fn, *calls, compiles=1)


def test_a_window_larger_than_the_dim_raises_as_eager():
    pdyn.reset()
    check_calls(windows, (torch.randn(2, 7),), (torch.randn(2, 2),))


def not_numpy(x):
    if isinstance(x, np.ndarray):
        return x
    return x * 2


def not_tracing(x):
    if torch._C._get_tracing_state():
        return x
    return x + 1


@pytest.mark.parametrize("fn", [not_numpy, not_tracing])
def test_queries_are_answered_without_a_break(fn):
    pdyn.reset()
    check_calls(fn, (torch.randn(3),), (torch.randn(3),))
    assert pdyn.stats()["graph_breaks"] == 0 and pdyn.stats()["compiles"] == 1


def repeated(x):
    out = x
    for y in [x] * x.shape[0]:
        out = out + y
    return out * len((1, 2) * x.shape[0])


def test_a_sequence_repeated_by_a_size_is_traced():
    pdyn.reset()
    check_calls(repeated, (torch.randn(3, 2),), (torch.randn(3, 2),))
    assert pdyn.stats()["graph_breaks"] == 0 and pdyn.stats()["compiles"] == 1

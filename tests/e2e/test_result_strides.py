"""`Tensor.stride()` of a traced result: symbolic where its layout rule fixes the strides at every
size (a fresh contiguous result of linear/matmul, size-1 dims included; a result contiguous at every
size whose dims are guarded off 1), one break where this call's size is 1 and the layouts differ
there (`x * 2` of an input of shape (1, n) keeps the input's stride of its size-1 dim)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import pdyn
from tests.helpers import check_calls

pytestmark = pytest.mark.filterwarnings("error:pdyn")

W = torch.randn(5, 3)


def strides(x):
    return F.linear(x, W).stride(), (x * 2).stride(), (x * 2).stride(1), x.sum(0, keepdim=True).stride(1)


def test_strides_of_results_are_symbolic_at_sizes_above_one():
    check_calls(strides, (torch.randn(2, 3),), (torch.randn(4, 3),), (torch.randn(7, 3),), compiles=1)
    assert pdyn.stats()["graph_breaks"] == 0


def test_a_size_one_dim_breaks_once_and_equals_eager():
    # (1, 3) with strides (3, 1), then (1, 3) with strides (1, 1): both contiguous, `x * 2` differs
    check_calls(strides, (torch.randn(3, 3),), (torch.randn(1, 3),), (torch.randn(3, 1).t(),),
                (torch.randn(5, 3),))
    assert pdyn.stats()["graph_breaks"] == 1


def fresh(x):
    y = F.linear(x.t(), W)   # a transposed input: linear's result is contiguous all the same
    return y.stride(), y.stride(0), torch.bmm(y.unsqueeze(1), y.unsqueeze(2)).stride()


def test_fresh_results_have_contiguous_strides_at_size_one():
    check_calls(fresh, (torch.randn(3, 4),), (torch.randn(3, 1),), (torch.randn(3, 6),), (torch.randn(3, 1),),
                compiles=1)
    assert pdyn.stats()["graph_breaks"] == 0

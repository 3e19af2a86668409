"""Sizes computed with torch ops on Python ints (`int(torch.div(n, k, rounding_mode="floor"))`, as
TorchScript-era model code writes them): the 0-d tensor is a graph node and `int()` of it is size
arithmetic, so one compile serves every size; a tensor written in place is read as data instead.
Device queries (`torch.cuda.get_device_capability()`) are answered and guarded, raising included."""

from __future__ import annotations

import pytest
import torch

import pdyn
from tests.helpers import check_calls

pytestmark = pytest.mark.filterwarnings("error:pdyn")

SIZES = [(torch.randn(n, 3),) for n in (4, 6, 7, 9, 12)]


def halves(x):
    k = int(torch.div(x.shape[0], 2, rounding_mode="floor"))
    return x[:k] * 2, x.view(k * 0 + x.shape[0], 3)


def truncated(x):
    t = torch.div(x.shape[0] + 1, 3, rounding_mode="trunc")
    return x[: int(t)] + t, t


def floor_divided(x):
    q = torch.floor_divide(x.shape[0], 4)
    return x.new_zeros(int(q), 2), q


@pytest.mark.parametrize("fn", [halves, truncated, floor_divided])
def test_int_of_a_division_of_sizes_is_size_arithmetic(fn):
    check_calls(fn, *SIZES, compiles=1)
    assert pdyn.stats()["graph_breaks"] == 0


def written_first(x):
    t = torch.div(x.shape[0], 2, rounding_mode="floor")
    t.add_(1)   # int() reads the data now: n // 2 + 1
    return x.new_ones(int(t)).sum()


def test_a_written_tensor_is_read_as_data():
    check_calls(written_first, *SIZES)
    assert pdyn.stats()["graph_breaks"] == 0


def negative_trunc(x, a: int):
    return x[: int(torch.div(a, -3, rounding_mode="trunc")) + 5]


def test_trunc_of_negative_ints_equals_eager():
    check_calls(negative_trunc, (torch.randn(9), 7), (torch.randn(9), 8), (torch.randn(9), 10),
                (torch.randn(9), -4), (torch.randn(9), -7), compiles=2)   # a's sign: guarded
    assert pdyn.stats()["graph_breaks"] == 0


def capability(x):
    try:
        major = torch.cuda.get_device_capability()[0]
    except (AssertionError, RuntimeError):
        major = 0
    if torch.cuda.is_available() and major >= 8:
        return x * 2
    return x + major + len(torch.cuda.get_arch_list())


def test_device_queries_are_guarded_answers():
    check_calls(capability, (torch.randn(3),), (torch.randn(4),), (torch.randn(5),))
    assert pdyn.stats()["graph_breaks"] == 0 and pdyn.stats()["compiles"] == 1

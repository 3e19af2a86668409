"""Never wrong across graph breaks: programs that break (in loops, blocks, callees) compared with
eager over several calls: results, exceptions and every mutation of the inputs."""

from __future__ import annotations

import io
import types

import pytest
import torch

import pdyn
from tests.helpers import check_calls

pytestmark = pytest.mark.filterwarnings("ignore:pdyn")

SINK = io.StringIO()


def brk() -> None:
    print("break", file=SINK)


@pytest.fixture(autouse=True)
def _fresh():
    pdyn.reset()
    yield
    pdyn.reset()


def _scaled_by(n):
    def scale(y):
        brk()
        return y * n
    return scale


def call_it(x, fn):
    return fn(x)


@pytest.mark.parametrize("backend", ["eager", "auto"])
def test_a_closure_passed_in_that_breaks_runs_with_each_calls_own_cells(backend):
    """A break inside a function from the frame calls it optimized on its own; the entry is guarded
    by its code, so a later call's closure (another `n`) must be the one that runs."""
    calls = [(torch.ones(3), _scaled_by(n)) for n in (2, 3, 4)]
    optimized = pdyn.optimize(call_it, backend=backend)
    for x, fn in calls:
        assert torch.equal(optimized(x, fn), call_it(x, fn))


def counts_twice(x):
    cnt = 0

    def bump(y):
        nonlocal cnt
        cnt += 10
        brk()
        cnt += 100
        return y * cnt

    first = bump(x)
    second = bump(x)   # in the resume function: `bump` crosses the break as a local of this call
    return first, second, cnt


def test_a_nested_function_with_nonlocal_writes_called_after_a_break_writes_this_calls_cell():
    check_calls(counts_twice, (torch.ones(3),), (torch.ones(3),), (torch.ones(5),), (torch.ones(5),))


def default_per_call(x, n):
    def scale(y, k=n):
        brk()
        return y * k
    brk()
    return scale(x), scale(x, k=1)


def test_a_default_made_per_call_is_this_calls_default_in_a_callee_that_breaks():
    check_calls(default_per_call, (torch.ones(3), 2), (torch.ones(3), 3), (torch.ones(4), 5))


class Holder:
    def __init__(self, n):
        self.n = n


def bound_per_call(x, k):
    def scaled(self, y):
        brk()
        return y * k + self.n
    method = types.MethodType(scaled, Holder(1))   # a break: the resume function gets the method
    return method(x)


def test_a_method_bound_per_call_runs_this_calls_function_after_a_break():
    check_calls(bound_per_call, *[(torch.ones(s), k) for s, k in ((3, 1), (3, 2), (4, 3), (4, 4), (3, 5))])

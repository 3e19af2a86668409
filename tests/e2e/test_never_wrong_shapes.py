"""Dynamic shapes, adversarially: size arithmetic, slicing, views and Python reads over calls whose
sizes cross the points where an expression changes its value or its type. Each test runs one
compiled function over several calls against eager (the later, symbolic calls are the point)."""

from __future__ import annotations

import math

import pytest
import torch

import pdyn
from tests.helpers import check_calls


def ones(*shape: int) -> torch.Tensor:
    return torch.ones(*shape)


def test_a_fractional_power_of_a_size_that_turns_negative_is_a_complex():
    """`(n - 5) ** 0.5` is a float while `n >= 5` and a complex below: the base's sign is guarded,
    so a later call with a negative base does not reuse the float code (it raised TypeError)."""
    def f(x):
        r = (x.shape[0] - 5) ** 0.5
        pdyn.graph_break()
        return r, x * 2

    check_calls(f, (ones(3),), (ones(5),), (ones(2),), (ones(9),), (ones(4),), (ones(7),))


def _sqrt_across_a_break(x, log):
    y = x * 2
    log.append(1)
    r = math.sqrt(x.shape[0] - 5)   # ValueError below 5, after the append
    pdyn.graph_break()
    return y * r


def _inverse_across_a_break(x, log):
    y = x * 2
    log.append(1)
    r = (x.shape[0] - 5) ** -1      # ZeroDivisionError at 5
    pdyn.graph_break()
    return y * r


@pytest.mark.parametrize("fn", [_sqrt_across_a_break, _inverse_across_a_break])
def test_a_float_size_that_raises_at_a_later_size_raises_after_the_effects_before_it(fn):
    """A float carried across a break is recomputed from the sizes by the frame code, before the
    deferred side effects: its domain (`math.sqrt`'s argument >= 0, a base under a negative power
    != 0) is guarded, so the call where it would raise recompiles and raises as eager does."""
    check_calls(fn, *[(ones(n), []) for n in (7, 9, 6, 3, 5, 8, 4)])


@pytest.mark.xfail(strict=True, reason="a float that overflows at a later size raises OverflowError in the "
                   "frame code at a break, before the deferred side effects; needs a guard that the "
                   "expression computes (or the rebuild after the effects)")
def test_a_float_size_that_overflows_at_a_later_size_raises_after_the_effects_before_it():
    def f(x, log):
        y = x * 2
        log.append(1)
        r = 2.0 ** (x.shape[0] * 400)   # 2**800 is a float; 2**1200 raises OverflowError
        pdyn.graph_break()
        return y * r

    check_calls(f, (ones(2), []), (ones(3), []), (ones(2), []))


def test_a_negative_constant_to_a_fractional_size_power_is_a_complex():
    def f(x):
        r = (-2.0) ** (x.shape[0] / 2)   # a float at even sizes, a complex at odd ones
        pdyn.graph_break()
        return r, x * 2

    check_calls(f, (ones(4),), (ones(6),), (ones(3),), (ones(8),), (ones(5),))


def test_arange_bounds_by_keyword_give_the_right_symbolic_length():
    """`torch.arange(start=2, end=n)`: the rule read `start` as 0; the fake run disagreed, so every
    call specialized its size and broke the graph (one compile per length)."""
    def f(x):
        n = x.shape[0]
        a = torch.arange(start=2, end=n) + torch.zeros(n - 2)
        return a, torch.arange(2, end=n, step=2).shape, torch.arange(end=n).sum()

    with pdyn.config.patch(check_hints=False):   # users run without the hint check
        check_calls(f, (ones(5),), (ones(8),), (ones(11),), compiles=1)

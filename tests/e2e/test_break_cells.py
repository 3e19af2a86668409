"""Closure cells that cross a graph break: a store to a real cell (a `nonlocal` in the resume
function, or in a closure it inlines) is replayed after the graph, later reads in the same trace
see the stored value, and every path to one cell (the frame's own, an input function's
`__closure__`) is one tracker. Each case compared with eager, with exact counts and no eager fallback."""

from __future__ import annotations

import torch

import pdyn
from tests.helpers import check_calls


def counts() -> tuple[int, int, int]:
    stats = pdyn.stats()
    return stats["compiles"], stats["graph_breaks"], stats["eager_fallbacks"]


def graphs() -> int:
    return pdyn.stats()["graphs"]


def test_a_counter_closure_incremented_before_and_after_a_break():
    def f(x):
        n = 0

        def inc():
            nonlocal n
            n += 1
            return n
        a = x * inc()
        print("break")
        b = a + inc()
        c = b * inc()
        return c + n, n

    pdyn.reset()
    check_calls(f, (torch.ones(3),), (torch.ones(4),), (torch.ones(5),))
    # `inc` is a new function per call, guarded by its code and cells: the resume function compiles once
    assert counts() == (2, 1, 0) and graphs() == 2


def test_nonlocal_in_a_nested_function_called_after_a_break():
    def f(x):
        total = x.sum()
        print("break")

        def add(v):   # made in the resume function, over its (the frame's real) cell
            nonlocal total
            total = total + v.sum()
            return total
        first = add(x)
        add(x * 2)
        return total * first

    pdyn.reset()
    check_calls(f, (torch.ones(3),), (torch.ones(4),), (torch.ones(5),))
    assert counts() == (2, 1, 0) and graphs() == 2


def test_a_lambda_reads_the_local_reassigned_after_the_break():
    def f(x):
        k = 2
        scale = lambda t: t * k  # noqa: E731
        y = scale(x)
        print("break")
        k = 3
        return scale(y) + k

    pdyn.reset()
    check_calls(f, (torch.ones(3),), (torch.ones(4),), (torch.ones(5),))
    assert counts() == (2, 1, 0) and graphs() == 2   # `scale`: guarded by its code, not its identity


def test_a_store_to_the_frame_cell_then_a_second_break_reaches_the_next_resume_function():
    def f(x):
        k = 1

        def get():
            return k
        print("break one")
        k = k + 1
        y = x * get()
        print("break two")
        k = k * 10
        return y + get()

    pdyn.reset()
    check_calls(f, (torch.ones(3),), (torch.ones(4),), (torch.ones(5),))
    # f once; each resume function once (`get` guarded by its code), the first breaking again
    assert counts() == (3, 2, 0) and graphs() == 2


def test_a_store_to_a_cell_of_the_optimized_closure_is_seen_by_the_caller():
    def outer():
        hits = 0

        def f(x):
            nonlocal hits
            hits += 1
            y = x + hits
            print("break")
            hits += 10
            return y * hits
        return f, lambda: hits

    pdyn.reset()
    f, eager_hits = outer()
    g, opt_hits = outer()
    optimized = pdyn.optimize(g, backend="eager")
    for n in (3, 4, 5):
        torch.testing.assert_close(optimized(torch.ones(n)), f(torch.ones(n)))
        assert opt_hits() == eager_hits()
    # the int in the cell is specialized once, then dynamic: f and its resume function compile twice
    assert counts() == (4, 2, 0) and graphs() == 4


def _make_counter():
    count = 0

    def bump(x):
        nonlocal count
        count += 1
        return x * 2, lambda: count   # a lambda over bump's real cell, made in the trace
    return bump


def test_a_lambda_over_an_input_functions_real_cell_crosses_a_break_as_that_cell():
    """The lambda must close over the real cell, not a copy made at the break: a store after the
    break (the second bump) is what it reads."""
    def f(x, bump):
        y, read = bump(x)
        print("break")
        y2, _ = bump(x)
        return y + read() + y2

    eager_bump, pdyn_bump = _make_counter(), _make_counter()
    optimized = pdyn.optimize(f, backend="eager")
    for _ in range(3):
        x = torch.ones(2)
        assert torch.equal(optimized(x, pdyn_bump), f(x, eager_bump))
    assert pdyn.stats(optimized)["eager_fallbacks"] == 0

"""Compile controls (issue 31, item 4): set_stance, a per-function recompile_limit, and
error_on_graph_break scoped in a `with` block."""

from __future__ import annotations

import warnings

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend


def branchy(x):
    return x * 2 if x.size(0) > 4 else x + 1


def test_fail_on_recompile_raises_and_entries_still_serve():
    backend = CountingBackend()
    f = pdyn.optimize(branchy, backend=backend)
    f(torch.randn(6))  # first compile: allowed under the stance
    with pdyn.set_stance("fail_on_recompile"):
        torch.testing.assert_close(f(torch.ones(7)), torch.ones(7) * 2)   # the entry serves
        with pytest.raises(pdyn.RecompileError, match=r"would recompile.*size\(0\) > 4\) failed"):
            f(torch.randn(3))
    assert pdyn.config.stance == "default"
    torch.testing.assert_close(f(torch.ones(3)), torch.ones(3) + 1)   # the stance is over: compiles
    assert len(backend.graphs) == 2


def test_eager_on_recompile_runs_eagerly_without_compiling():
    backend = CountingBackend()
    f = pdyn.optimize(branchy, backend=backend)
    f(torch.randn(6))
    pdyn.set_stance("eager_on_recompile")
    try:
        torch.testing.assert_close(f(torch.ones(3)), torch.ones(3) + 1)
        torch.testing.assert_close(f(torch.ones(8)), torch.ones(8) * 2)   # the entry still runs
    finally:
        pdyn.set_stance("default")
    assert len(backend.graphs) == 1 and pdyn.stats(f)["compiles"] == 1


def test_set_stance_rejects_an_unknown_stance():
    with pytest.raises(pdyn.UserError, match="fail_on_recompile"):
        pdyn.set_stance("never")


def test_recompile_limit_per_function():
    def double(x):
        return x * 2   # dynamic=False: one compile per size

    limited = pdyn.optimize(double, backend="eager", dynamic=False, recompile_limit=2)
    other = pdyn.optimize(lambda x: x * 3, backend="eager", dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for size in (2, 3, 4, 5):
            x = torch.arange(float(size))
            torch.testing.assert_close(limited(x), x * 2)
            other(x)
    assert pdyn.stats(limited)["compiles"] == 2
    assert any("recompile limit (2)" in str(w.message) for w in caught)
    assert pdyn.stats(other)["compiles"] == 4   # the global limit (8) is its own
    with pytest.raises(pdyn.UserError):
        pdyn.optimize(double, recompile_limit=0)


def breaks(x):
    y = x + 1
    print("", end="")
    return y * 2


def test_error_on_graph_break_in_a_with_block():
    f = pdyn.optimize(breaks, backend="eager")
    with pdyn.config.patch(error_on_graph_break=True):
        with pytest.raises(pdyn.Unsupported):
            f(torch.randn(3))
    assert not pdyn.config.error_on_graph_break
    pdyn.reset()
    with pdyn.error_on_graph_break():
        with pytest.raises(pdyn.Unsupported):
            f(torch.randn(3))
    torch.testing.assert_close(f(torch.ones(3)), torch.full((3,), 4.0))   # outside: a break, as before
    assert pdyn.stats(f)["graph_breaks"] == 1

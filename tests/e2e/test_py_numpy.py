"""numpy values run correctly under pdyn: NumPy calls on arrays are traced as torch._numpy's ops
(docs/numpy.md); what cannot be traced exactly is a clean graph break whose reason names numpy
(never a wrong result, never an internal error for the frame)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import pdyn
from tests.helpers import check_calls


def _scale(x):
    return np.float32(1.5) * x


def _arange(x):
    return x + torch.from_numpy(np.arange(x.shape[0])).float()


def _to_numpy(x):
    y = x.sin()
    return torch.tensor(y.numpy() * 2) + x


def _reduce(x):
    y = x.sin()
    z = np.asarray([1.0, 2.0]).sum()
    return y * float(z), y.cos()


def _constant(x):
    return x * np.pi  # a float constant of the module: no break


# an elementwise NumPy node keeps sizes symbolic; np.arange(n) has no symbolic shape rule: it specializes
# the size it reads, so a size that changes between calls makes the next compile break there (docs/numpy.md)
@pytest.mark.parametrize("fn,breaks,compiles", [(_scale, 0, 1), (_arange, 1, 2), (_to_numpy, 0, 1), (_reduce, 1, 1),
                                                (_constant, 0, 1)])
def test_numpy_uses_are_traced_or_break_cleanly_and_match_eager(fn, breaks, compiles):
    with warnings.catch_warnings(), pdyn.config.patch(warn_no_graph=False):  # _scale has no graph to compile
        warnings.simplefilter("error")  # an internal-error fallback warns
        opt = check_calls(fn, *[(torch.randn(n),) for n in (3, 4, 6)])
    stats = pdyn.stats(opt)
    assert stats["eager_fallbacks"] == 0 and stats["graph_breaks"] == breaks and stats["compiles"] == compiles, stats
    reasons = pdyn.explain(fn)(torch.randn(3)).break_reasons
    first_call_breaks = breaks and compiles == 1   # the others break on the second size only
    assert (reasons[0].key == "numpy" or "numpy" in reasons[0].reason) if first_call_breaks else not reasons


def test_numpy_array_input_is_a_graph_input():
    def f(x, arr):
        y = x * 2
        return y + torch.as_tensor(arr), arr.shape

    arr = np.ones(3, dtype=np.float32)
    opt = pdyn.optimize(f, backend="eager")
    for _ in range(2):
        got, want = opt(torch.ones(3), arr), f(torch.ones(3), arr)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] == want[1]
    stats = pdyn.stats(opt)
    assert (stats["eager_fallbacks"], stats["graph_breaks"], stats["compiles"]) == (0, 0, 1), stats
    got, want = opt(torch.ones(3), np.ones(3, dtype=np.float64)), f(torch.ones(3), np.ones(3, dtype=np.float64))
    assert got[0].dtype == want[0].dtype == torch.float64 and got[1] == want[1]
    assert pdyn.stats(opt)["compiles"] == 2   # the array's dtype is guarded

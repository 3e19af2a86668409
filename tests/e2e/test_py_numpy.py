"""numpy values run correctly under pdyn: numpy is not traced, each use is a clean graph break
whose reason names numpy (never a wrong result, never an internal error for the frame)."""

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


@pytest.mark.parametrize("fn,breaks", [(_scale, 1), (_arange, 1), (_to_numpy, 1), (_reduce, 1), (_constant, 0)])
def test_numpy_uses_break_cleanly_and_match_eager(fn, breaks):
    with warnings.catch_warnings(), pdyn.config.patch(warn_no_graph=False):  # _scale has no graph to compile
        warnings.simplefilter("error")  # an internal-error fallback warns
        opt = check_calls(fn, *[(torch.randn(n),) for n in (3, 4, 6)])
    stats = pdyn.stats(opt)
    assert stats["eager_fallbacks"] == 0 and stats["graph_breaks"] == breaks and stats["compiles"] == 1, stats
    reasons = pdyn.explain(fn)(torch.randn(3)).break_reasons
    assert (reasons[0].key == "numpy" or "numpy" in reasons[0].reason) if breaks else not reasons


def test_numpy_array_input_runs_eagerly_where_used():
    def f(x, arr):
        y = x * 2
        return y + torch.as_tensor(arr), arr.shape

    arr = np.ones(3, dtype=np.float32)
    opt = pdyn.optimize(f, backend="eager")
    for _ in range(2):
        got, want = opt(torch.ones(3), arr), f(torch.ones(3), arr)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] == want[1]
    assert pdyn.stats(opt)["eager_fallbacks"] == 0
    reasons = pdyn.explain(f)(torch.ones(3), arr).break_reasons
    assert any(r.key == "numpy" or "numpy" in r.reason.lower() or "ndarray" in r.reason for r in reasons)

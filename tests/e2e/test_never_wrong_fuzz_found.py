"""Bugs the differential fuzzer (tests/fuzz) found with new seeds, reduced: each program equals
eager on every call, and compiles where it should rather than falling back on an internal error."""

from __future__ import annotations

import warnings

import pdyn
import torch

from tests.helpers import check_calls


def _no_internal_error(fn, *calls, compiles=None):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimized = check_calls(fn, *calls, compiles=compiles)
    internal = [str(w.message) for w in caught if "internal error" in str(w.message)]
    assert not internal, internal[0][:300]
    return optimized


def _masked_pairs(seed: int, *sizes: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, generator=g), torch.randn(n, n + 2, generator=g)) for n in sizes]


def test_max_min_of_an_unbacked_size_and_an_int():
    # fuzz seed 9352: max(len(x), x[mask].shape[-1]) compared the unbacked u0 with Python's max
    # (GuardOnDataDependentSymNode, an internal error); it is Max(s0, u0), a size like any other
    def f(x0, x2):
        n = max(len(x0), x2[x2 > 0].size()[-1])
        m = min(x2[x2 > 0].shape[0], 3)
        return torch.zeros(n), torch.ones(m) * m

    _no_internal_error(f, *_masked_pairs(0, 4, 3, 5), compiles=1)


def test_max_of_an_unbacked_size_read_by_python():
    def f(x0, x2):
        n = max(len(x0), x2[x2 > 0].size()[-1])
        return x2 * 2, n, n > 4

    _no_internal_error(f, *_masked_pairs(1, 4, 3, 5))

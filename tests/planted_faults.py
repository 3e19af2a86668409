"""Faults the validation and bisect tests plant: each leaves pdyn right at the sizes traced and
wrong at others, which is what validation and bisection must name."""

from __future__ import annotations

import pytest
import sympy
import torch

from pdyn.hook import compile_frame
from pdyn.shapes.shape_env import FloorDiv


def drop_expr_guards(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every entry loses its expression guards (`s0 > 5`): calls on the other side get in."""
    keep = compile_frame.shape_guards
    monkeypatch.setattr(compile_frame, "shape_guards",
                        lambda env: [g for g in keep(env) if type(g).__name__ != "ExprGuard"])


def branches_on_length(x):
    if x.shape[0] > 5:
        return x * 2
    return x * 3


def split_floor_division(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """A wrong rewrite rule: FloorDiv(a + c, b) split into FloorDiv(a, b) + FloorDiv(c, b). Right
    where the terms divide b, wrong elsewhere."""
    original = FloorDiv.eval.__func__

    def split(cls, a, b):
        if isinstance(a, sympy.Add) and b.is_Integer and b > 1:
            return sympy.Add(*(FloorDiv(t, b) for t in a.args))
        return original(cls, a, b)

    monkeypatch.setattr(FloorDiv, "eval", classmethod(split))
    sympy.core.cache.clear_cache()   # sympy caches constructed FloorDivs: none built before or after
    request.addfinalizer(sympy.core.cache.clear_cache)


def strided_branch(x, w):
    y = torch.nn.functional.conv1d(x, w, stride=2, padding=1)
    if y.shape[2] < 8:   # guarded with the rule's size: too small a size passes it
        return y * 2
    return y * 3

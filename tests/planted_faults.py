"""Faults the validation and bisect tests plant: each leaves pdyn right at the sizes traced and
wrong at others, which is what validation and bisection must name."""

from __future__ import annotations

import pytest

from pdyn.hook import compile_frame


def drop_expr_guards(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every entry loses its expression guards (`s0 > 5`): calls on the other side get in."""
    keep = compile_frame.shape_guards
    monkeypatch.setattr(compile_frame, "shape_guards",
                        lambda env: [g for g in keep(env) if type(g).__name__ != "ExprGuard"])


def branches_on_length(x):
    if x.shape[0] > 5:
        return x * 2
    return x * 3

"""`x[t1, t2]`-style advanced indexing with integer tensors (transformers' mask functions index a
padding mask by broadcast aranges) against torch's meta kernels."""

from __future__ import annotations

import operator

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pdyn.shapes.shape_env import ShapeEnv
from tests.ops.shape_rules_harness import check_rule, sym_tensor

sizes = st.integers(1, 4)
seeds = st.integers(0, 2**16)


@st.composite
def an_index(draw: st.DrawFn, env: ShapeEnv, ndim: int) -> tuple:
    """Up to `ndim` items: integer tensors of broadcastable shapes, ints, slices, None, one `...`."""
    items: list = []
    tensors = 0
    for _ in range(draw(st.integers(1, ndim))):
        kind = draw(st.sampled_from(["tensor", "tensor", "int", "slice", "none", "ellipsis"]))
        if kind == "tensor":
            shape = tuple(draw(st.sampled_from([1, 3])) for _ in range(draw(st.integers(0, 2))))
            items.append(sym_tensor(env, shape, f"i{tensors}", torch.int64))
            tensors += 1
        elif kind == "int":
            items.append(draw(st.integers(-1, 0)))
        elif kind == "slice":
            items.append(slice(draw(st.sampled_from([None, 1])), None))
        elif kind == "none":
            items.append(None)
        elif Ellipsis not in items:
            items.append(Ellipsis)
    if not tensors:
        items.append(sym_tensor(env, (2,), "i", torch.int64))
    return tuple(items)


@settings(max_examples=60, deadline=None)
@given(st.lists(sizes, min_size=1, max_size=4).map(tuple), st.data(), seeds)
def test_advanced_indexing_matches_meta(shape, data, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    index = data.draw(an_index(env, len(shape)))
    check_rule(env, operator.getitem, (x, index), seed=seed)

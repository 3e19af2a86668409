"""Shape rules of tensors made from Python data, grids and diff against torch's meta kernels."""

from __future__ import annotations

import operator

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pdyn.ops.shape_rules import infer_sizes
from pdyn.shapes.shape_env import ShapeEnv
from tests.ops.shape_rules_harness import check_rule, sym_int, sym_tensor

FAST = settings(max_examples=40, deadline=None)
sizes = st.integers(0, 5)
shapes = st.lists(sizes, max_size=4).map(tuple)
seeds = st.integers(0, 2**16)


@FAST
@given(shapes, st.integers(-4, 3), st.integers(-1, 4), st.data(), seeds)
def test_diff_matches_meta(shape, dim, n, data, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    kwargs = {"n": n, "dim": dim}
    for i, key in enumerate(("prepend", "append")):
        if data.draw(st.booleans()):
            other = list(shape)
            if other and data.draw(st.integers(0, 3)):
                other[dim % len(other) if -len(other) <= dim < len(other) else 0] = data.draw(sizes)
            kwargs[key] = sym_tensor(env, tuple(other), f"e{i}")
    check_rule(env, torch.diff, (x,), kwargs, seed=seed)


@FAST
@given(st.lists(st.integers(0, 1), min_size=1, max_size=3), st.sampled_from([None, "ij", "xy"]), st.booleans(),
       seeds)
def test_meshgrid_matches_meta(ndims, indexing, as_list, seed):
    env = ShapeEnv()
    tensors = [sym_tensor(env, (i + 2,) * n, f"t{i}") for i, n in enumerate(ndims)]
    args = (tensors,) if as_list else tuple(tensors)
    check_rule(env, torch.meshgrid, args, {"indexing": indexing} if indexing else {}, seed=seed)


@FAST
@given(st.recursive(st.integers(0, 6) | st.floats(-2, 2), lambda inner: st.lists(inner, max_size=3), max_leaves=8),
       st.booleans(), st.sampled_from([torch.tensor, torch.as_tensor, "new_tensor"]), seeds)
def test_tensor_from_data_matches_meta(data, symbolic, target, seed):
    env = ShapeEnv()
    count = iter(range(100))

    def sym(value):
        if isinstance(value, list):
            return [sym(v) for v in value]
        return sym_int(env, value, f"n{next(count)}") if symbolic and isinstance(value, int) else value

    data = sym(data)
    args = (sym_tensor(env, (2,), "x"), data) if target == "new_tensor" else (data,)
    kwargs = {} if target == "new_tensor" else {"device": "meta"}
    check_rule(env, target, args, kwargs, seed=seed, allow_none=True)  # no rule for ragged data


def test_tensor_of_symbolic_values_has_static_sizes():
    env = ShapeEnv()
    n = sym_int(env, 5, "n")
    assert infer_sizes(env, torch.tensor, ([[n, 2], [3, n]],), {}, None) == [(2, 2)]
    assert infer_sizes(env, torch.tensor, ([],), {}, None) == [(0,)]
    assert not env.specialized and not env.guards


def test_adding_a_tensor_into_a_number_broadcasts():
    """`r = 0; r += t` (T5's relative buckets) is `r = 0 + t`."""
    env = ShapeEnv()
    t = sym_tensor(env, (3, 4), "t")
    assert infer_sizes(env, operator.iadd, (0, t), {}, None) == [t.sizes]

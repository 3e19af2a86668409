"""Indexing-along-a-dim, sorting and scan shape rules against torch's meta kernels on random shapes."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pdyn.ops.shape_rules import SymTensor, infer_sizes
from pdyn.shapes.shape_env import ShapeEnv
from tests.ops.shape_rules_harness import check_rule, sym_int, sym_tensor

FAST = settings(max_examples=40, deadline=None)
sizes = st.integers(0, 5)
shapes = st.lists(sizes, max_size=4).map(tuple)
seeds = st.integers(0, 2**16)
dims = st.integers(-5, 4)
LONG = torch.int64


@st.composite
def near(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape like `shape`: each dim kept, shrunk, grown or set to 0/1; sometimes a dim more or less."""
    out = [draw(st.sampled_from([s, s, max(s - 1, 0), s + 1, 0, 1])) for s in shape]
    extra = draw(st.integers(0, 9))
    if extra == 0 and out:
        out.pop()
    elif extra == 1:
        out.append(draw(sizes))
    return tuple(out)


def _index(env: ShapeEnv, shape: tuple[int, ...], name: str, dtype: torch.dtype = LONG) -> SymTensor:
    return sym_tensor(env, shape, name, dtype)


@FAST
@given(shapes, dims, st.data(), seeds)
def test_gather_matches_meta(shape, dim, data, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    dtype = data.draw(st.sampled_from([LONG, LONG, torch.int32, torch.float32]))
    index = _index(env, data.draw(near(shape)), "i", dtype)
    target = data.draw(st.sampled_from([torch.gather, "gather"]))
    check_rule(env, target, (x, dim, index), seed=seed)


@FAST
@given(shapes, dims, st.data(), seeds)
def test_scatter_family_matches_meta(shape, dim, data, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    index = _index(env, data.draw(near(shape)), "i")
    src = sym_tensor(env, data.draw(near(shape)), "s", data.draw(st.sampled_from([torch.float32] * 5 + [LONG])))
    case = data.draw(st.sampled_from(["scatter", "scatter_value", "scatter_reduce_kw", "scatter_", "scatter_add",
                                      "scatter_add_", "scatter_reduce", "scatter_reduce_"]))
    cases = {
        "scatter": (torch.scatter, (x, dim, index, src), {}),
        "scatter_value": ("scatter", (x, dim, index, 1.5), {}),
        "scatter_reduce_kw": ("scatter", (x, dim, index, src), {"reduce": "add"}),
        "scatter_": ("scatter_", (x, dim, index), {"value": 2.0}),
        "scatter_add": (torch.scatter_add, (x, dim, index, src), {}),
        "scatter_add_": ("scatter_add_", (x, dim, index, src), {}),
        "scatter_reduce": (torch.scatter_reduce, (x, dim, index, src, "amax"), {"include_self": False}),
        "scatter_reduce_": ("scatter_reduce_", (x, dim, index, src, "sum"), {}),
    }
    target, args, kwargs = cases[case]
    check_rule(env, target, args, kwargs, seed=seed)


@FAST
@given(shapes, dims, st.lists(sizes, max_size=2).map(tuple), seeds)
def test_index_select_matches_meta(shape, dim, index_shape, seed):
    env = ShapeEnv()
    x, index = sym_tensor(env, shape, "x"), _index(env, index_shape, "i")
    check_rule(env, torch.index_select, (x, dim, index), seed=seed)


@FAST
@given(shapes, dims, st.data(), seeds)
def test_index_add_copy_fill_match_meta(shape, dim, data, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    index = _index(env, data.draw(st.lists(sizes, max_size=2).map(tuple)), "i")
    source = sym_tensor(env, data.draw(near(shape)), "s")
    target = data.draw(st.sampled_from([torch.index_add, "index_add_", torch.index_copy, "index_copy_",
                                        torch.index_fill, "index_fill_"]))
    last = 0.5 if target in (torch.index_fill, "index_fill_") else source
    check_rule(env, target, (x, dim, index, last), seed=seed)


@FAST
@given(shapes, st.one_of(st.none(), dims), st.data(), seeds)
def test_take_along_dim_matches_meta(shape, dim, data, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    index = _index(env, data.draw(near(shape)), "i")
    check_rule(env, torch.take_along_dim, (x, index) if dim is None else (x, index, dim), seed=seed)


@FAST
@given(shapes, dims, st.integers(-7, 7), st.integers(-2, 7), st.booleans(), seeds)
def test_narrow_and_select_match_meta(shape, dim, start, length, symbolic, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    if symbolic:
        start, length = sym_int(env, start, "start"), sym_int(env, length, "length")
    check_rule(env, torch.narrow, (x, dim, start, length), seed=seed)
    check_rule(env, "select", (x, dim, start), seed=seed)


# -- sorting, scans, tiling ----------------------------------------------------------------------


@FAST
@given(shapes, dims, st.sampled_from([torch.sort, "sort", torch.argsort, torch.cummax, "cummin"]), seeds)
def test_sort_and_scans_match_meta(shape, dim, target, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    kwargs = {"dim": dim} if target in (torch.sort, "sort", torch.argsort) else {}
    args = (x,) if kwargs else (x, dim)
    check_rule(env, target, args, kwargs, seed=seed)
    if target is torch.sort:
        check_rule(env, target, (x,), {"stable": True, "dim": dim, "descending": True}, seed=seed)


@FAST
@given(shapes, dims, st.integers(-1, 6), st.booleans(), seeds)
def test_topk_matches_meta(shape, dim, k, symbolic, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    k = sym_int(env, k, "k") if symbolic else k
    check_rule(env, torch.topk, (x, k, dim), seed=seed)
    check_rule(env, "topk", (x, k), {"largest": False}, seed=seed)


@FAST
@given(shapes, st.sampled_from([1, -2, (1, 2), (3,), ()]), st.sampled_from([None, 0, -1, (0, 1), (1,), ()]), seeds)
def test_roll_matches_meta(shape, shifts, roll_dims, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    check_rule(env, torch.roll, (x, shifts, roll_dims), seed=seed)


@FAST
@given(shapes, st.lists(st.integers(0, 3), max_size=5), st.booleans(), seeds)
def test_tile_matches_meta(shape, counts, symbolic, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    counts = [sym_int(env, n, f"n{i}") for i, n in enumerate(counts)] if symbolic else counts
    check_rule(env, torch.tile, (x, counts), seed=seed)
    check_rule(env, "tile", (x, *counts), seed=seed)


@FAST
@given(shapes, st.integers(-1, 3), st.sampled_from([None, 0, -1, 2]), st.booleans(), st.data(), seeds)
def test_repeat_interleave_matches_meta(shape, repeats, dim, symbolic, data, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    kwargs = {} if dim is None else {"dim": dim}
    if data.draw(st.integers(0, 3)) == 0 and dim is not None:  # tensor counts: the length must be given
        kwargs["output_size"] = sym_int(env, data.draw(sizes), "total") if symbolic else data.draw(sizes)
        n = shape[dim] if shape and -len(shape) <= dim < len(shape) else 1
        repeats = _index(env, (n,), "r")
    elif symbolic:
        repeats = sym_int(env, repeats, "r")
    check_rule(env, torch.repeat_interleave, (x, repeats), kwargs, seed=seed)


@FAST
@given(shapes, st.integers(-3, 3), st.sampled_from(["tril_", "triu_", "cumsum_", "cumprod_"]), seeds)
def test_in_place_scans_keep_sizes(shape, arg, target, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    check_rule(env, target, (x, arg), seed=seed)


@FAST
@given(shapes, st.sampled_from(["scalars", "scalar_other", "scalar_input", "method"]), seeds)
def test_where_with_scalars_matches_meta(shape, form, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    cond = SymTensor(x.sizes, torch.bool)
    cases = {
        "scalars": (torch.where, (cond, 1.0, 0.0)),
        "scalar_other": (torch.where, (cond, x, 0.0)),
        "scalar_input": (torch.where, (cond, -1, x)),
        "method": ("where", (x, cond, 2.0)),
    }
    target, args = cases[form]
    check_rule(env, target, args, seed=seed)


def test_gather_keeps_the_index_symbolic():
    env = ShapeEnv()
    x, index = sym_tensor(env, (4, 5), "x"), _index(env, (4, 1), "i")
    assert infer_sizes(env, torch.gather, (x, -1, index), {}, None) == [index.sizes]
    assert not env.specialized
    assert env.simplify(index.sizes[0]) == x.sizes[0] or env.guards  # index rows <= input rows, guarded


def test_topk_of_a_symbolic_k_guards_it_fits():
    env = ShapeEnv()
    x, k = sym_tensor(env, (4, 6), "x"), sym_int(env, 3, "k")
    assert infer_sizes(env, torch.topk, (x, k), {}, None) == [(x.sizes[0], k)] * 2
    assert [str(g.expr) for g in env.guards] == [f"{k} <= {x.sizes[1]}"]

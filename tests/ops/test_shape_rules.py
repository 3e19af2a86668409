"""Shape rules against torch's meta kernels on random shapes, and unit tests that they stay symbolic."""

from __future__ import annotations

import operator

import pytest
import sympy
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from pdyn.ops.shape_rules import SymTensor, infer_sizes
from pdyn.shapes.shape_env import FloorDiv, ShapeEnv
from tests.ops.shape_rules_harness import check_rule, sym_int, sym_tensor

FAST = settings(max_examples=30, deadline=None)
sizes = st.integers(0, 5)
shapes = st.lists(sizes, max_size=4).map(tuple)
seeds = st.integers(0, 2**16)


@st.composite
def broadcastable(draw: st.DrawFn, n: int = 2) -> list[tuple[int, ...]]:
    """`n` shapes that mostly broadcast: a base shape with dims set to 1, dropped, or changed."""
    base = draw(shapes)
    out = []
    for _ in range(n):
        shape = list(base[draw(st.integers(0, len(base))) :])
        for i in range(len(shape)):
            shape[i] = draw(st.sampled_from([shape[i]] * 4 + [1, draw(sizes)]))
        out.append(tuple(shape))
    return out


# -- pointwise -----------------------------------------------------------------------------------

UNARY = [torch.exp, "relu", F.gelu, torch.sigmoid, operator.neg, "abs", F.dropout, F.silu, torch.tanh]
BINARY = [torch.add, operator.mul, "sub", torch.maximum, torch.lt, operator.truediv, "pow", torch.atan2]
INPLACE = ["add_", "mul_", operator.iadd]
CONVERSIONS = [("to", (torch.float64,)), ("float", ()), ("contiguous", ()), (torch.clone, ()), ("half", ())]


@FAST
@given(shapes, st.sampled_from(UNARY))
def test_unary_matches_meta(shape, target):
    env = ShapeEnv()
    check_rule(env, target, (sym_tensor(env, shape, "x"),))


@FAST
@given(broadcastable(2), st.sampled_from(BINARY + INPLACE), seeds)
def test_binary_broadcast_matches_meta(pair, target, seed):
    env = ShapeEnv()
    check_rule(env, target, (sym_tensor(env, pair[0], "a"), sym_tensor(env, pair[1], "b")), seed=seed)


@FAST
@given(broadcastable(3), st.sampled_from(["where", "lerp", "clamp", "masked_fill", "addcmul"]), seeds)
def test_ternary_broadcast_matches_meta(triple, op, seed):
    env = ShapeEnv()
    a, b, c = (sym_tensor(env, s, n) for s, n in zip(triple, "abc"))
    mask = SymTensor(a.sizes, torch.bool)
    cases = {
        "where": (torch.where, (mask, b, c), {}),
        "lerp": (torch.lerp, (a, b, c), {}),
        "clamp": (torch.clamp, (a,), {"min": b, "max": c}),
        "masked_fill": ("masked_fill", (b, mask, 0.0), {}),
        "addcmul": (torch.addcmul, (a, b, c), {}),
    }
    target, args, kwargs = cases[op]
    check_rule(env, target, args, kwargs, seed=seed)


@FAST
@given(shapes, st.sampled_from(CONVERSIONS))
def test_conversion_keeps_sizes(shape, case):
    env = ShapeEnv()
    target, rest = case
    check_rule(env, target, (sym_tensor(env, shape, "x"), *rest))


# -- reductions ----------------------------------------------------------------------------------

REDUCTIONS = [torch.sum, "sum", torch.mean, torch.amax, "amin", torch.prod, torch.max, "min", torch.argmax,
              "argmin", torch.var, "std", torch.norm, torch.logsumexp, torch.any, "all", torch.std_mean]


@st.composite
def dim_args(draw: st.DrawFn, ndim: int) -> dict:
    dim = draw(st.one_of(
        st.none(), st.integers(-ndim - 1, ndim), st.lists(st.integers(-ndim, max(ndim - 1, 0)), max_size=3).map(tuple)
    ))
    out = {} if dim is None and draw(st.booleans()) else {"dim": dim}
    if draw(st.booleans()):
        out["keepdim"] = draw(st.booleans())
    return out


@FAST
@given(shapes, st.sampled_from(REDUCTIONS), st.data())
def test_reduction_matches_meta(shape, target, data):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    kwargs = data.draw(dim_args(len(shape)))
    no_rule = target is torch.logsumexp and kwargs.get("dim") == ()
    check_rule(env, target, (x,), kwargs, seed=data.draw(seeds), allow_none=no_rule)


# -- matrix products -----------------------------------------------------------------------------


@st.composite
def matmul_shapes(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    batch = draw(broadcastable(2))
    n, k, m = draw(sizes), draw(sizes), draw(sizes)
    k2 = draw(st.sampled_from([k, k, k, draw(sizes)]))
    a = (*batch[0][-2:], n, k) if draw(st.booleans()) else (k,)
    b = (*batch[1][-2:], k2, m) if draw(st.booleans()) else (k2,)
    return a, b


@FAST
@given(matmul_shapes(), st.sampled_from([torch.matmul, operator.matmul, torch.mm, torch.bmm, "matmul"]), seeds)
def test_matmul_matches_meta(pair, target, seed):
    env = ShapeEnv()
    check_rule(env, target, (sym_tensor(env, pair[0], "a"), sym_tensor(env, pair[1], "b")), seed=seed)


@FAST
@given(matmul_shapes(), st.booleans(), seeds)
def test_linear_matches_meta(pair, bias, seed):
    env = ShapeEnv()
    x, w = sym_tensor(env, pair[0], "x"), sym_tensor(env, tuple(reversed(pair[1])), "w")
    b = sym_tensor(env, pair[1][-1:], "b") if bias else None
    check_rule(env, F.linear, (x, w, b), seed=seed)


@FAST
@given(matmul_shapes(), st.sampled_from([torch.addmm, torch.baddbmm]), st.integers(0, 2), seeds)
def test_addmm_matches_meta(pair, target, drop, seed):
    env = ShapeEnv()
    a, b = sym_tensor(env, pair[0], "a"), sym_tensor(env, pair[1], "b")
    out = pair[0][:-1] + pair[1][-1:]
    check_rule(env, target, (sym_tensor(env, out[drop:], "c"), a, b), seed=seed)


# -- factories -----------------------------------------------------------------------------------


@FAST
@given(st.lists(st.integers(0, 5), max_size=3), st.sampled_from(["zeros", "full", "new_ones", "ones_like"]), seeds)
def test_factory_with_symbolic_sizes_matches_meta(values, op, seed):
    env = ShapeEnv()
    ns = [sym_int(env, v, f"n{i}") for i, v in enumerate(values)]
    x = sym_tensor(env, tuple(values), "x")
    cases = {
        "zeros": (torch.zeros, tuple(ns), {"device": "meta"}),
        "full": (torch.full, (ns, 2.0), {"device": "meta"}),
        "new_ones": ("new_ones", (x, ns), {}),
        "ones_like": (torch.ones_like, (x,), {}),
    }
    target, args, kwargs = cases[op]
    check_rule(env, target, args, kwargs, seed=seed)


@FAST
@given(st.integers(-6, 9), st.integers(-6, 9), st.sampled_from([None, 1, 2, 3, -1, -2]), seeds)
def test_arange_with_symbolic_bounds_matches_meta(start, end, step, seed):
    env = ShapeEnv()
    s, e = sym_int(env, start, "start"), sym_int(env, end, "end")
    args = (e,) if step is None and start == 0 else ((s, e) if step is None else (s, e, step))
    check_rule(env, torch.arange, args, {"device": "meta"}, seed=seed)


# -- unit tests: the rules stay symbolic ----------------------------------------------------------


def _two_by_two():
    env = ShapeEnv()
    return env, sym_tensor(env, (5, 6), "a"), sym_tensor(env, (5, 6), "b")


def test_add_guards_equal_batch_and_returns_symbols():
    env, a, b = _two_by_two()
    s0, s1, s2, s3 = sorted(env.hints, key=lambda s: s.name)
    (out,) = infer_sizes(env, torch.add, (a, b), {}, None)
    assert out == (s0, s1)
    assert env.simplify(s2) == s0 and env.simplify(s3) == s1
    assert not env.specialized


def test_view_minus_one_merges_symbols():
    env, a, _ = _two_by_two()
    s0, s1 = a.sizes
    assert infer_sizes(env, "view", (a, -1), {}, None) == [(s0 * s1,)]
    assert not env.guards and not env.specialized


def test_slice_with_constant_stop_is_right_for_other_sizes():
    env, a, _ = _two_by_two()
    s0, s1 = a.sizes
    ((n0, n1),) = infer_sizes(env, operator.getitem, (a, (slice(None), slice(None, 3))), {}, None)
    assert n0 == s0 and not env.specialized
    for value in (2, 3, 4, 9):
        assert n1.xreplace({s1: value}) == min(value, 3)


def test_slice_with_symbolic_stop_clamps_to_size():
    env, a, _ = _two_by_two()
    n = sym_int(env, 9, "n")
    ((out, _),) = infer_sizes(env, operator.getitem, (a, slice(None, n)), {}, None)
    assert env.hint(out) == 5 and out.xreplace({n: 3, a.sizes[0]: 7}) == 3


def test_reshape_with_minus_one_records_divisibility_guard():
    env = ShapeEnv()
    x = sym_tensor(env, (3, 8), "x")
    s0, s1 = x.sizes
    (out,) = infer_sizes(env, "reshape", (x, s0, -1, 4), {}, None)
    assert out == (s0, FloorDiv(s1, 4), 4)  # exact: the guard below makes it s1/4
    assert [str(g.expr) for g in env.guards] == ["Eq(Mod(s1, 4), 0)"]


def test_squeeze_keeps_symbolic_dims_and_drops_ones():
    env = ShapeEnv()
    x = sym_tensor(env, (1, 7, 1), "x")
    assert infer_sizes(env, "squeeze", (x,), {}, None) == [(x.sizes[1],)]
    assert not env.guards


def test_matmul_guards_inner_dim_and_broadcasts_batch():
    env = ShapeEnv()
    a, b = sym_tensor(env, (4, 5, 6), "a"), sym_tensor(env, (6, 7), "b")
    (out,) = infer_sizes(env, torch.matmul, (a, b), {}, None)
    assert out == (a.sizes[0], a.sizes[1], b.sizes[1])
    assert env.simplify(b.sizes[0]) == a.sizes[2]


def test_chunk_of_symbolic_dim_specializes_it():
    env = ShapeEnv()
    x = sym_tensor(env, (7, 3), "x")
    out = infer_sizes(env, "chunk", (x, 3), {}, None)
    assert [o[0] for o in out] == [3, 3, 1] and all(o[1] == x.sizes[1] for o in out)
    assert list(env.specialized) == [x.sizes[0]]


def test_conv2d_output_is_a_formula_of_the_input():
    env = ShapeEnv()
    x, w = sym_tensor(env, (2, 3, 9, 9), "x"), SymTensor((sympy.Integer(8), sympy.Integer(3), 3, 3), torch.float32)
    ((n, c, h, _),) = infer_sizes(env, F.conv2d, (x, w), {"stride": 2, "padding": 1}, None)
    assert (n, c) == (x.sizes[0], 8) and env.hint(h) == 5 and h.xreplace({x.sizes[2]: 16}) == 8


def test_unknown_op_has_no_rule():
    env = ShapeEnv()
    assert infer_sizes(env, torch.nonzero, (sym_tensor(env, (3,), "x"),), {}, None) is None
    assert infer_sizes(env, operator.getitem, (sym_tensor(env, (3,), "x"), [True, False, True]), {}, None) is None
    assert infer_sizes(env, operator.getitem, (sym_tensor(env, (3,), "x"), [[0], [1]]), {}, None) is None


def test_a_list_of_ints_indexes_as_a_1d_tensor():
    env = ShapeEnv()
    x = sym_tensor(env, (3, 4, 5), "x")
    assert infer_sizes(env, operator.getitem, (x, [0, 1]), {}, None) == [(2, x.sizes[1], x.sizes[2])]
    assert infer_sizes(env, operator.getitem, (x, (Ellipsis, [-1], slice(None))), {}, None) == \
        [(x.sizes[0], 1, x.sizes[2])]


@pytest.mark.parametrize("target", [torch.sum, "sum"])
def test_method_and_function_share_a_rule(target):
    env = ShapeEnv()
    x = sym_tensor(env, (3, 4), "x")
    assert infer_sizes(env, target, (x, 1), {"keepdim": True}, None) == [(x.sizes[0], 1)]

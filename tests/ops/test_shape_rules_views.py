"""View, indexing, join and nn shape rules against torch's meta kernels on random shapes."""

from __future__ import annotations

import operator

import sympy
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from pdyn.ops.shape_rules import SymTensor, infer_sizes
from pdyn.ops.shape_rules_views import view_groups
from pdyn.shapes.shape_env import FloorDiv, ShapeEnv
from tests.ops.shape_rules_harness import check_rule, sym_int, sym_tensor

FAST = settings(max_examples=30, deadline=None)
sizes = st.integers(0, 5)
shapes = st.lists(sizes, max_size=4).map(tuple)
seeds = st.integers(0, 2**16)
dims = st.integers(-5, 4)


@st.composite
def target_shape(draw: st.DrawFn, x: SymTensor) -> list:
    """A reshape target over x's symbols: dims kept, merged or split in 2 (s // 2), maybe a -1, or junk."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.lists(st.integers(-1, 6), max_size=4))
    out: list = []
    for size in x.sizes:
        move = draw(st.sampled_from(["keep", "merge", "split"]))
        if move == "merge" and out:
            out[-1] = out[-1] * size
        elif move == "split":
            out += [2, sympy.floor(size / 2)]
        else:
            out.append(size)
    if out and draw(st.booleans()):
        out[draw(st.integers(0, len(out) - 1))] = -1
    return out


@FAST
@given(shapes, st.sampled_from(["view", "reshape", torch.reshape]), st.data())
def test_reshape_matches_meta(shape, target, data):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    out = data.draw(target_shape(x))
    args = (x, out) if target is torch.reshape else (x, *out)
    check_rule(env, target, args, seed=data.draw(seeds))


@FAST
@given(shapes, dims, dims, st.sampled_from([(2, -1), (-1,), (-1, 1, 2)]), seeds)
def test_flatten_and_unflatten_match_meta(shape, start, end, parts, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    check_rule(env, torch.flatten, (x, start, end), seed=seed)
    check_rule(env, "unflatten", (x, start, parts), seed=seed)


@FAST
@given(shapes, st.data())
def test_dim_order_ops_match_meta(shape, data):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    order = data.draw(st.permutations(range(len(shape))))
    if data.draw(st.booleans()):
        order = [d - len(shape) if data.draw(st.booleans()) else d for d in order]
    check_rule(env, "permute", (x, *order))
    check_rule(env, torch.permute, (x, order))
    d0, d1 = data.draw(dims), data.draw(dims)
    for target in (torch.transpose, "swapaxes", torch.movedim):
        check_rule(env, target, (x, d0, d1))
    check_rule(env, "t", (x,))
    check_rule(env, torch.movedim, (x, (0, d1), (d0, -1)))


@FAST
@given(shapes, st.data())
def test_expand_and_repeat_match_meta(shape, data):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))  # meta lets (0, -1) through
    want = [data.draw(st.sampled_from([-1, s, data.draw(sizes)])) for s in x.sizes]
    check_rule(env, "expand", (x, *lead, *want), seed=data.draw(seeds))
    y = sym_tensor(env, data.draw(shapes), "y")
    check_rule(env, "expand_as", (x, y), seed=data.draw(seeds))
    counts = data.draw(st.lists(st.integers(0, 3), min_size=max(len(shape) - 1, 0), max_size=len(shape) + 2))
    check_rule(env, "repeat", (x, *counts), seed=data.draw(seeds))


@FAST
@given(st.lists(st.sampled_from([0, 1, 1, 2, 3]), max_size=4).map(tuple), st.data())
def test_squeeze_and_unsqueeze_match_meta(shape, data):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    dim = data.draw(st.one_of(st.none(), dims, st.lists(dims, max_size=2).map(tuple)))
    check_rule(env, torch.squeeze, (x,) if dim is None else (x, dim))
    check_rule(env, "unsqueeze", (x, data.draw(dims)))


# -- getitem -------------------------------------------------------------------------------------

bounds = st.one_of(st.none(), st.integers(-7, 7))


@st.composite
def index_items(draw: st.DrawFn, env: ShapeEnv) -> tuple:
    """An index tuple of ints, slices (bounds sometimes symbolic ints), None and `...`."""
    def bound() -> object:
        value = draw(bounds)
        return sym_int(env, value, f"n{len(env.hints)}") if value is not None and draw(st.booleans()) else value

    item = st.one_of(
        st.integers(-6, 6),
        st.builds(lambda: slice(bound(), bound(), draw(st.sampled_from([None, 1, 2, 3])))),
        st.none(),
        st.just(Ellipsis),
    )
    return tuple(draw(st.lists(item, max_size=4)))


@FAST
@given(shapes, st.data())
def test_getitem_matches_meta(shape, data):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    index = data.draw(index_items(env))
    item = index if len(index) != 1 else index[0]
    check_rule(env, operator.getitem, (x, item), seed=data.draw(seeds), allow_none=index.count(Ellipsis) > 1)


# -- joins and splits ----------------------------------------------------------------------------


@FAST
@given(shapes, st.integers(1, 3), dims, st.data())
def test_cat_and_stack_match_meta(shape, count, dim, data):
    env = ShapeEnv()
    tensors = []
    for i in range(count):
        other = list(shape)
        if other and data.draw(st.booleans()):
            other[dim % len(other)] = data.draw(sizes)
        tensors.append(sym_tensor(env, (0,) if data.draw(st.integers(0, 6)) == 0 else tuple(other), f"t{i}"))
    check_rule(env, torch.cat, (tensors, dim), seed=data.draw(seeds))
    check_rule(env, torch.stack, (tensors,), {"dim": dim}, seed=data.draw(seeds))


@FAST
@given(shapes, dims, st.data())
def test_split_chunk_unbind_match_meta(shape, dim, data):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    sections = data.draw(st.one_of(st.integers(1, 4), st.lists(st.integers(0, 4), max_size=3)))
    if isinstance(sections, list) and shape and data.draw(st.booleans()):
        sections = [x.sizes[dim % len(shape)] - 1, 1]  # symbolic sections that add up
    check_rule(env, torch.split, (x, sections, dim), seed=data.draw(seeds))
    check_rule(env, "chunk", (x, data.draw(st.integers(1, 4)), dim), seed=data.draw(seeds))
    check_rule(env, torch.unbind, (x, dim), seed=data.draw(seeds))


# -- nn ------------------------------------------------------------------------------------------


@FAST
@given(shapes, dims, st.sampled_from([F.softmax, "log_softmax", torch.cumsum]))
def test_softmax_like_matches_meta(shape, dim, target):
    env = ShapeEnv()
    check_rule(env, target, (sym_tensor(env, shape, "x"), dim))


@FAST
@given(shapes, st.integers(1, 2), st.booleans(), seeds)
def test_layer_norm_and_rms_norm_match_meta(shape, k, affine, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    normalized = list(shape[-k:])
    w = sym_tensor(env, tuple(normalized), "w") if affine else None
    check_rule(env, F.layer_norm, (x, normalized, w, w), seed=seed)
    check_rule(env, F.rms_norm, (x, normalized), {"weight": w}, seed=seed)


@FAST
@given(st.integers(1, 3), st.integers(1, 3), st.lists(sizes, max_size=2), st.integers(1, 3), seeds)
def test_group_norm_matches_meta(n, per_group, spatial, groups, seed):
    env = ShapeEnv()
    channels = per_group * groups if seed % 4 else per_group * groups + 1
    x = sym_tensor(env, (n, channels, *spatial), "x")
    w = sym_tensor(env, (channels,), "w")
    check_rule(env, F.group_norm, (x, groups, w, w), seed=seed)


@FAST
@given(shapes, st.integers(1, 5), st.integers(0, 4), seeds)
def test_embedding_matches_meta(shape, vocab, dim, seed):
    env = ShapeEnv()
    idx = sym_tensor(env, shape, "idx", torch.int64)
    check_rule(env, F.embedding, (idx, sym_tensor(env, (vocab, dim), "w")), seed=seed)


@st.composite
def conv_case(draw: st.DrawFn, n: int) -> tuple:
    groups = draw(st.integers(1, 2))
    c_in, c_out = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    spatial = tuple(draw(st.integers(1, 9)) for _ in range(n))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(n))
    lead = (draw(st.integers(1, 3)), c_in) if draw(st.booleans()) else (c_in,)
    options = {
        "stride": draw(st.integers(1, 3)), "padding": draw(st.sampled_from([0, 1, 2, "same", "valid"])),
        "dilation": draw(st.integers(1, 2)), "groups": groups,
    }
    return lead + spatial, (c_out, c_in // groups, *kernel), options


@FAST
@given(st.sampled_from([1, 2]), st.data())
def test_conv_matches_meta(n, data):
    env = ShapeEnv()
    x_shape, w_shape, options = data.draw(conv_case(n))
    x, w = sym_tensor(env, x_shape, "x"), sym_tensor(env, w_shape, "w")
    b = sym_tensor(env, w_shape[:1], "b") if data.draw(st.booleans()) else None
    check_rule(env, F.conv1d if n == 1 else F.conv2d, (x, w, b), options, seed=data.draw(seeds))


@FAST
@given(st.lists(st.integers(1, 9), min_size=3, max_size=4).map(tuple), st.data())
def test_pooling_matches_meta(shape, data):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    kernel, stride = data.draw(st.integers(1, 4)), data.draw(st.sampled_from([None, 1, 2, 3]))
    pad, ceil, dilation = data.draw(st.integers(0, 2)), data.draw(st.booleans()), data.draw(st.integers(1, 2))
    seed = data.draw(seeds)
    check_rule(env, F.max_pool2d, (x, kernel, stride, pad), {"ceil_mode": ceil, "dilation": dilation}, seed=seed)
    check_rule(env, F.avg_pool2d, (x, kernel, stride, pad, ceil), seed=seed)
    check_rule(env, F.adaptive_avg_pool2d, (x, data.draw(st.sampled_from([1, 3, (2, None)]))), seed=seed)


@FAST
@given(shapes, st.lists(st.integers(-2, 2), max_size=6), seeds)
def test_constant_pad_matches_meta(shape, pads, seed):
    env = ShapeEnv()
    check_rule(env, F.pad, (sym_tensor(env, shape, "x"), pads[: len(pads) // 2 * 2]), seed=seed)


def test_view_groups_pairs_keep_merge_and_split():
    env = ShapeEnv()
    x = sym_tensor(env, (3, 4, 6), "x")
    s0, s1, s2 = x.sizes
    assert view_groups(env, x.sizes, (s0 * s1, 2, s2 / 2)) == [([0, 1], [0]), ([2], [1, 2])]
    assert view_groups(env, x.sizes, (s0, s1, s2)) == [([0], [0]), ([1], [1]), ([2], [2])]


def test_unflatten_of_symbolic_dim_guards_divisibility():
    env = ShapeEnv()
    x = sym_tensor(env, (6,), "x")
    (out,) = infer_sizes(env, "unflatten", (x, 0, (2, -1)), {}, None)
    assert out == (2, FloorDiv(x.sizes[0], 2))
    assert [str(g.expr) for g in env.guards] == ["Eq(Mod(s0, 2), 0)"]

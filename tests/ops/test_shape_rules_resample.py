"""interpolate, pad (every mode) and einsum shape rules against torch's meta kernels on random shapes."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pdyn.ops.shape_rules import infer_sizes
from pdyn.shapes.shape_env import ShapeEnv
from tests.ops.shape_rules_harness import check_rule, sym_int, sym_tensor

FAST = settings(max_examples=40, deadline=None)
sizes = st.integers(0, 5)
seeds = st.integers(0, 2**16)
MODES = ["nearest", "nearest-exact", "area", "linear", "bilinear", "bicubic", "trilinear"]


def _meta_works(shape: tuple[int, ...], mode: str) -> bool:
    """torch 2.13's meta kernels of nearest raise on an empty batch (`cond must be a bool`); CPU does not."""
    return not (shape[0] == 0 and mode.startswith("nearest"))


@FAST
@given(st.lists(sizes, min_size=2, max_size=5).map(tuple), st.sampled_from(MODES), st.data(), seeds)
def test_interpolate_with_scale_factor_matches_meta(shape, mode, data, seed):
    assume(_meta_works(shape, mode))
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    scale = data.draw(st.sampled_from([2, 3, 1, 0.5, 1.5, 2.0, 0.25, 0.1, 1 / 3, -1]))
    kwargs = {"scale_factor": scale, "mode": mode}
    if data.draw(st.booleans()) and mode in ("linear", "bilinear", "bicubic", "trilinear"):
        kwargs["align_corners"] = data.draw(st.booleans())
    if data.draw(st.integers(0, 4)) == 0:
        kwargs["recompute_scale_factor"] = True
    if data.draw(st.integers(0, 4)) == 0:
        kwargs["antialias"] = True
    no_rule = (isinstance(scale, float) and scale in (0.1, 1 / 3)) or mode == "area"  # float rounding; empty area
    check_rule(env, F.interpolate, (x,), kwargs, seed=seed, allow_none=no_rule)


@FAST
@given(st.lists(sizes, min_size=3, max_size=5).map(tuple), st.sampled_from(MODES), st.data(), seeds)
def test_interpolate_with_size_matches_meta(shape, mode, data, seed):
    assume(_meta_works(shape, mode))
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    n = len(shape) - 2
    out = data.draw(st.lists(st.integers(0, 7), min_size=n, max_size=n))
    if data.draw(st.booleans()):
        out = [sym_int(env, v, f"n{i}") for i, v in enumerate(out)]
    size = out[0] if n == 1 and data.draw(st.booleans()) else tuple(out)
    check_rule(env, F.interpolate, (x,), {"size": size, "mode": mode}, seed=seed, allow_none=mode == "area")


@FAST
@given(st.lists(sizes, min_size=1, max_size=5).map(tuple), st.sampled_from(["constant", "reflect", "replicate",
                                                                           "circular"]), st.data(), seeds)
def test_pad_matches_meta(shape, mode, data, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    pads = data.draw(st.lists(st.integers(-3, 4), min_size=2, max_size=6))
    pads = pads[: len(pads) // 2 * 2]
    if data.draw(st.booleans()):
        pads = [sym_int(env, p, f"p{i}") for i, p in enumerate(pads)]
    kwargs = {"mode": mode} if data.draw(st.booleans()) or mode != "constant" else {}
    if data.draw(st.integers(0, 5)) == 0:
        kwargs["value"] = 1.0
    check_rule(env, F.pad, (x, pads), kwargs, seed=seed)


EQUATIONS = ["ij,jk->ik", "bij,bjk->bik", "ij->ji", "ii->i", "ii", "ij,ij->ij", "i,j->ij", "...ij,...jk->...ik",
             "b...d,bd->b...", "ij,jk", "bhqd,bhkd->bhqk", "i->", "...", "a...,a->...", "ii->"]


@st.composite
def einsum_case(draw: st.DrawFn) -> tuple[str, list[tuple[int, ...]]]:
    """An equation and operand shapes that mostly fit it: each label one size (sometimes 1, or off)."""
    equation = draw(st.sampled_from(EQUATIONS))
    lhs = equation.split("->")[0]
    label = {ch: draw(st.integers(0, 4)) for ch in lhs if ch.isalpha()}
    ellipsis = draw(st.lists(st.integers(1, 3), max_size=2))
    shapes = []
    for term in lhs.split(","):
        shape: list[int] = []
        for ch in term.replace("...", "."):
            if ch == ".":
                shape += ellipsis[draw(st.integers(0, len(ellipsis))):]
            else:
                shape.append(draw(st.sampled_from([label[ch]] * 4 + [1, draw(st.integers(0, 4))])))
        shapes.append(tuple(shape))
    return equation, shapes


@FAST
@given(einsum_case(), st.booleans(), seeds)
def test_einsum_matches_meta(case, as_list, seed):
    env = ShapeEnv()
    equation, shapes = case
    operands = [sym_tensor(env, s, f"t{i}") for i, s in enumerate(shapes)]
    args = (equation, operands) if as_list else (equation, *operands)
    check_rule(env, torch.einsum, args, seed=seed)


def test_interpolate_scale_is_a_formula_of_the_input():
    env = ShapeEnv()
    x = sym_tensor(env, (2, 3, 5, 7), "x")
    ((n, c, h, w),) = infer_sizes(env, F.interpolate, (x,), {"scale_factor": (2, 1.5), "mode": "bilinear"}, None)
    assert (n, c, h) == (*x.sizes[:2], 2 * x.sizes[2]) and env.hint(w) == 10 and w.xreplace({x.sizes[3]: 9}) == 13
    assert not env.specialized


@st.composite
def attention_shapes(draw: st.DrawFn) -> dict:
    """q, k, v (and maybe a mask) of attention: batch dims, heads (a divisor for GQA), lengths, embeddings."""
    batch = draw(st.lists(st.integers(1, 3), max_size=1))
    hk = draw(st.integers(1, 3))
    hq = hk * draw(st.integers(1, 2)) if draw(st.booleans()) else draw(st.integers(1, 4))
    L, S, E, Ev = (draw(st.integers(1, 5)) for _ in range(4))  # noqa: N806
    pick = lambda n, other: draw(st.sampled_from([n] * 5 + [other]))  # noqa: E731
    heads = [hq, hk, pick(hk, 3)] if draw(st.booleans()) else None
    dims = lambda h, rest: tuple(batch) + ((h,) if heads else ()) + rest  # noqa: E731
    hv = heads[2] if heads else None
    out = {"q": dims(hq, (L, E)), "k": dims(hk, (S, pick(E, 2))), "v": dims(hv, (pick(S, 2), Ev))}
    if draw(st.booleans()):
        scores = dims(hq, (L, S))
        out["mask"] = tuple(draw(st.sampled_from([s, s, 1])) for s in scores[draw(st.integers(0, len(scores))):])
    return out


@FAST
@given(attention_shapes(), st.booleans(), st.booleans(), seeds)
def test_attention_matches_meta(shapes, gqa, causal, seed):
    env = ShapeEnv()
    q, k, v = (sym_tensor(env, shapes[n], n) for n in "qkv")
    kwargs = {"enable_gqa": gqa, "is_causal": causal}
    if "mask" in shapes:
        kwargs["attn_mask"] = sym_tensor(env, shapes["mask"], "m", torch.bool)
    check_rule(env, F.scaled_dot_product_attention, (q, k, v), kwargs, seed=seed)

"""Shape rules of the ops whose lack made a model specialize its sizes (issue 30, item 4): more
pointwise ops, the order statistics, pixel shuffles and pairwise reductions, against torch's meta
kernels on random shapes (where the rule raises, eager must raise too), and a program using each
compiles once over three batch sizes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from pdyn.shapes.shape_env import ShapeEnv
from tests.helpers import check_calls
from tests.ops.shape_rules_harness import check_rule, sym_tensor

FAST = settings(max_examples=30, deadline=None)
shapes = st.lists(st.integers(0, 5), min_size=1, max_size=4).map(tuple)
seeds = st.integers(0, 2**16)


@FAST
@given(shapes, st.sampled_from([torch.acosh, torch.lgamma, torch.logit, torch.signbit, F.hardshrink]), seeds)
def test_unary_pointwise_rules_match_meta(shape, op, seed):
    env = ShapeEnv()
    check_rule(env, op, (sym_tensor(env, shape, "x"),), seed=seed)


@FAST
@given(shapes, shapes, st.sampled_from([torch.logaddexp, torch.ldexp, torch.igamma]), seeds)
def test_binary_pointwise_rules_broadcast_as_meta(a, b, op, seed):
    env = ShapeEnv()
    check_rule(env, op, (sym_tensor(env, a, "a"), sym_tensor(env, b, "b")), seed=seed)


@FAST
@given(shapes, st.sampled_from(["median", "nanmedian", "mode", "kthvalue"]), st.integers(-4, 3), st.booleans(),
       st.integers(1, 3), seeds)
def test_order_statistics_match_meta(shape, name, dim, keepdim, k, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    args = (x, k, dim, keepdim) if name == "kthvalue" else (x, dim, keepdim)
    check_rule(env, getattr(torch, name), args, seed=seed)


@FAST
@given(st.lists(st.integers(0, 8), min_size=3, max_size=4).map(tuple), st.integers(1, 2), st.booleans(), seeds)
def test_pixel_shuffles_match_meta(shape, r, up, seed):
    env = ShapeEnv()
    check_rule(env, F.pixel_shuffle if up else F.pixel_unshuffle, (sym_tensor(env, shape, "x"), r), seed=seed)


@FAST
@given(shapes, shapes, st.integers(-2, 1), seeds)
def test_pairwise_reductions_broadcast_and_reduce_as_meta(a, b, dim, seed):
    env = ShapeEnv()
    x1, x2 = sym_tensor(env, a, "a"), sym_tensor(env, b, "b")
    check_rule(env, F.cosine_similarity, (x1, x2), {"dim": dim}, seed=seed)
    check_rule(env, F.pairwise_distance, (x1, x2), {"keepdim": dim == 1}, seed=seed + 1)


PROGRAMS = {
    "acosh": lambda x: (x.abs() + 1).acosh(),
    "logaddexp": lambda x: x.logaddexp(x * 2),
    "median": lambda x: x.median(dim=-1).values + x.median(),
    "kthvalue": lambda x: x.kthvalue(2, dim=-1).values,
    "mode": lambda x: x.round().mode(dim=1).indices,
    "pixel_shuffle": lambda x: F.pixel_unshuffle(F.pixel_shuffle(x.reshape(x.shape[0], 4, 2, 2), 2), 2),
    "cosine_similarity": lambda x: F.cosine_similarity(x, x[:1] * 2, dim=-1),
    "pairwise_distance": lambda x: F.pairwise_distance(x, x.flip(0), keepdim=True),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_program_calling_the_op_compiles_once_over_batch_sizes(name):
    check_calls(PROGRAMS[name], *((torch.randn(n, 4, 4),) for n in (3, 5, 7)), compiles=1)

"""cross_entropy and nll_loss shape rules against torch's meta kernels on random shapes."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from pdyn.shapes.shape_env import ShapeEnv
from tests.ops.shape_rules_harness import check_rule, sym_tensor

FAST = settings(max_examples=60, deadline=None)
seeds = st.integers(0, 2**16)


@FAST
@given(st.lists(st.integers(0, 4), min_size=1, max_size=4).map(tuple), st.sampled_from([F.cross_entropy, F.nll_loss]),
       st.sampled_from(["mean", "sum", "none"]), st.sampled_from(["index", "probs", "wrong"]), st.booleans(), seeds)
def test_class_losses_match_meta(shape, loss, reduction, target_kind, weighted, seed):
    env = ShapeEnv()
    x = sym_tensor(env, shape, "x")
    class_dim = 0 if len(shape) == 1 else 1
    if target_kind == "index":
        target = sym_tensor(env, shape[:class_dim] + shape[class_dim + 1:], "t", torch.int64)
    elif target_kind == "probs":
        target = sym_tensor(env, shape, "t")
    else:  # a target whose batch differs from the input's
        target = sym_tensor(env, (shape[0] + 1,) + shape[class_dim + 1:], "t", torch.int64)
    kwargs = {"reduction": reduction}
    if weighted:
        kwargs["weight"] = sym_tensor(env, (shape[class_dim],), "w")
    check_rule(env, loss, (x, target), kwargs, seed=seed, allow_none=True)


def test_cross_entropy_keeps_sizes_symbolic():
    env = ShapeEnv()
    x, t = sym_tensor(env, (6, 5), "x"), sym_tensor(env, (6,), "t", torch.int64)
    sizes = check_rule(env, F.cross_entropy, (x, t), {"reduction": "none", "ignore_index": -100})
    assert sizes is not None and str(sizes[0][0]) == "s0"
    assert check_rule(env, F.cross_entropy, (x, t), {"label_smoothing": 0.1}) == [()]

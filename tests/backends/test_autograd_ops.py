"""Gradients through pdyn's joint forward/backward graphs, op family by op family, under Triton's
interpreter: every input's gradient equals eager's, over two sizes served by one compile."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import pdyn
from tests.backends.autograd_util import backward_targets, check_grads, grad_input

randn = torch.randn


def test_pointwise_chain_with_broadcast_gradients_match_eager():
    def f(x, y):
        z = (x * y + x / (y.abs() + 1) - y).exp().tanh() * x.sigmoid()
        return z.relu() + F.silu(x) ** 2 + torch.sqrt(x * x + 1) + torch.rsqrt(y * y + 1) + torch.log(x.abs() + 1) - (-x)

    rec = check_grads(f, (grad_input(3, 5), grad_input(5)), (grad_input(4, 7), grad_input(7)))
    assert not any(t.startswith("vjp_") for t in backward_targets(rec))  # every op has its rule


def test_where_masked_fill_and_casts_gradients_match_eager():
    def f(x, y):
        return torch.where(x > 0, x, y * 2).masked_fill(x < -1, 0.0).double().float() * 3

    check_grads(f, (grad_input(3, 5), grad_input(3, 5)), (grad_input(6, 2), grad_input(6, 2)))


def test_matmul_linear_and_batched_matmul_gradients_match_eager():
    def f(x, w, b, v):
        h = F.linear(x, w, b)
        return (h @ w) @ v.t() + torch.bmm(x, x.transpose(1, 2)).sum(-1, keepdim=True)

    for calls in [((2, 3), (2, 5))]:
        check_grads(f, *[(grad_input(b, s, 4), grad_input(4, 4), grad_input(4), grad_input(6, 4)) for b, s in calls])
    rec = check_grads(lambda x, w: torch.matmul(x, w), (grad_input(2, 3, 4), grad_input(4, 5)),
                      (grad_input(3, 6, 4), grad_input(4, 5)))
    assert "matmul" in backward_targets(rec)


def test_reductions_gradients_match_eager():
    def f(x):
        return x.sum(0) + x.mean(1, keepdim=True).sum(0) + x.sum() * x.mean() + torch.sum(x * x, dim=(0, 1))

    check_grads(f, (grad_input(3, 4, 5),), (grad_input(5, 2, 5),))


def test_softmax_and_log_softmax_gradients_match_eager():
    def f(x):
        return x.softmax(-1) * 2 + F.log_softmax(x, dim=1)

    rec = check_grads(f, (grad_input(3, 7),), (grad_input(5, 9),))
    assert not any(t.startswith("vjp_") for t in backward_targets(rec))


def test_layer_norm_gradients_match_eager():
    def f(x, w, b):
        return F.layer_norm(x, (8,), w, b, 1e-5) * 3

    rec = check_grads(f, (grad_input(2, 3, 8), grad_input(8), grad_input(8)),
                      (grad_input(4, 5, 8), grad_input(8), grad_input(8)))
    assert not any(t.startswith("vjp_") for t in backward_targets(rec))


def test_gelu_and_addmm_gradients_match_eager():
    def f(b, x, w):
        return F.gelu(torch.addmm(b, x, w)) + F.gelu(x, approximate="tanh").sum(-1, keepdim=True)

    rec = check_grads(f, (grad_input(5), grad_input(3, 4), grad_input(4, 5)),
                      (grad_input(5), grad_input(6, 4), grad_input(4, 5)))
    assert [t for t in backward_targets(rec) if t.startswith("vjp_")] == ["vjp_gelu"]  # the tanh form


def test_embedding_gradients_match_eager_with_repeated_ids():
    def f(ids, w):
        return F.embedding(ids, w) * 2

    ids = torch.tensor([[1, 2, 1], [0, 1, 9]])
    rec = check_grads(f, (ids, grad_input(10, 4)), (torch.tensor([[3, 3, 3, 1], [2, 2, 0, 0]]), grad_input(10, 4)))
    assert "embedding_backward" in backward_targets(rec)


def _views(x, y):
    a = x.reshape(x.shape[0], -1).transpose(0, 1).unsqueeze(0)
    b = torch.cat([x, y * 2], dim=1).permute(2, 0, 1)
    c = x[:, 1:, ::2] * 3 + y[:, 1:, :1].expand(-1, -1, (x.shape[2] + 1) // 2)
    return a.sum(0).t(), b, c, torch.stack([x, y], dim=1).flatten(1)


def _splits(x, y):
    p, q = x.split(2, dim=-1)[0], torch.chunk(y, 2, dim=1)[1]
    return p * 2, q.exp(), x.unbind(1)[1]


VIEW_CALLS = ((grad_input(2, 3, 4), grad_input(2, 3, 4)), (grad_input(3, 5, 6), grad_input(3, 5, 6)))


def test_views_cat_and_slicing_gradients_match_eager():
    rec = check_grads(_views, *VIEW_CALLS)
    assert not any(t.startswith("vjp_") for t in backward_targets(rec))


def test_split_chunk_and_unbind_gradients_match_eager_and_unused_items_get_none():
    rec = check_grads(_splits, *VIEW_CALLS, compiles=2)  # 4 and 6 split in 2 and 3 items
    assert not any(t.startswith("vjp_") for t in backward_targets(rec))
    check_grads(lambda x, y: (x.split(2, dim=-1)[0], torch.chunk(y, 2, dim=1)[1] * 0 + x[:, :1, :1]), *VIEW_CALLS,
                compiles=None)
    check_grads(lambda x, y: (x.split(2, dim=-1)[0], torch.chunk(y, 2, dim=1)[1].sum() * 0), *VIEW_CALLS, compiles=None)


def test_views_and_splits_in_one_backward_graph():  # a 2-D tile's y index was taken as 0-d
    check_grads(lambda x, y: _views(x, y) + _splits(x, y), *VIEW_CALLS, compiles=None)


def test_cross_entropy_with_ignored_labels_gradients_match_eager():
    def f(logits, labels):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))

    labels = torch.tensor([[1, -100, 3], [0, 2, -100]])
    rec = check_grads(f, (grad_input(2, 3, 5), labels),
                      (grad_input(2, 4, 5), torch.tensor([[4, 4, -100, 0], [1, 2, 3, -100]])))
    assert not any(t.startswith("vjp_") for t in backward_targets(rec))


def test_seeded_dropout_draws_as_eager_and_backward_reuses_its_mask():
    """The dropout's mask is saved by the forward, never drawn again in the backward."""
    def f(x, w):
        return F.dropout(x @ w, 0.5, training=True).exp()

    rec = check_grads(f, (grad_input(4, 6), grad_input(6, 6)), (grad_input(7, 6), grad_input(6, 6)), seed=3)
    joint = rec.joint
    saved = [joint.forward.graph.find_nodes(op="output")[0].args[0][joint.n_outputs + i].name
             for kind, i in joint.saved if kind == "output"]
    assert any("getitem" in name for name in saved), saved  # the mask
    assert not any("dropout" in t for t in backward_targets(rec))


def test_attention_dropout_replays_the_forwards_generator_state():
    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)

    rec = check_grads(f, *[tuple(grad_input(1, 2, s, 4) for _ in range(3)) for s in (3, 5)], seed=7)
    assert any(t.startswith("vjp_keep_rng") for t in backward_targets(rec))


def test_pointwise_chain_saves_only_its_input_where_eager_saves_every_step():
    """The memory claim: the backward recomputes the chain from its input, so the forward keeps
    no intermediate (eager keeps one tensor per step)."""
    def f(x):
        return x.sin().cos().exp().tanh()

    rec = check_grads(f, (grad_input(4, 8),), (grad_input(6, 8),))
    assert rec.joint.saved == [("input", 0)]
    count = [0]

    def pack(t):
        count[0] += 1
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        f(grad_input(4, 8))
    assert count[0] >= 4


def test_op_without_a_rule_runs_its_backward_through_torch_alone():
    def f(x):
        return torch.cumsum(x * 2, dim=1).exp()

    rec = check_grads(f, (grad_input(3, 4),), (grad_input(5, 6),))
    targets = backward_targets(rec)
    assert [t for t in targets if t.startswith("vjp_")] == ["vjp_cumsum"]
    assert rec.compiled[-1].pdyn_backward is not None


def test_frozen_weight_gets_no_gradient_and_backward_skips_it():
    def f(x, w):
        return F.linear(x, w).relu()

    w = torch.randn(3, 4)
    rec = check_grads(f, (grad_input(2, 4), w), (grad_input(5, 4), w))
    assert rec.joint.grad_inputs == [0]
    assert pdyn.stats()["backward_graphs"] >= 1


def test_pow_with_a_fractional_exponent_gradients_match_eager():  # the backward's pow(x, -0.5) failed
    check_grads(lambda x: x.abs().pow(0.5) + x.pow(3), (grad_input(2, 3, 2),), (grad_input(4, 5, 2),))


def test_untracked_outputs_require_no_grad_and_zero_gradient_ops_give_zeros():
    """full_like and detach results require no grad, as eager's; sign's gradient is zeros (not
    None: an optimizer skips a None gradient but decays a zero one)."""
    def f(x):
        return torch.full_like(x, 1e-3), x.detach() * 2, x.sign(), torch.div(x, 2, rounding_mode="floor")

    fn = pdyn.optimize(f, backend="triton")
    x = grad_input(3, 4)
    outs = fn(x)
    assert [o.requires_grad for o in outs] == [o.requires_grad for o in f(x)] == [False, False, True, True]
    (outs[2].sum() + outs[3].sum()).backward()
    assert torch.equal(x.grad, torch.zeros(3, 4))

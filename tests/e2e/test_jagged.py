"""Jagged batches (the KeyedJaggedTensor pattern): values split by data-dependent lengths and
pooled per feature and example; one compile serves every batch, and the split's own check
(`sum(lengths) == values.shape[0]`) is a runtime assert, never a guard."""

import torch

import pdyn
from tests.e2e.test_data_dependent import run


def jagged(features, batch, seed, dim=3):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 4, (features, batch), generator=g)
    return torch.randn(int(lengths.sum()), dim, generator=g), lengths


def segment_mean(values, lengths):
    """Per feature, per example: the mean of that example's rows (0 where it has none)."""
    batch = lengths.shape[1]
    pieces = values.split(lengths.sum(1).tolist())
    out = []
    for f in range(len(pieces)):
        segment = torch.repeat_interleave(torch.arange(batch), lengths[f])
        sums = torch.zeros(batch, values.shape[1]).index_add_(0, segment, pieces[f])
        out.append(sums / lengths[f].clamp(min=1).unsqueeze(1))
    return torch.stack(out)


def test_segment_means_over_varying_batches_compile_once():
    calls = [jagged(3, b, seed) for seed, b in enumerate([4, 6, 2, 9])]
    run(segment_mean, calls, graphs=1)


def test_split_check_is_a_runtime_assert_not_a_guard():
    def f(values, lengths):
        return torch.stack([p.sum(0) for p in values.split(lengths.tolist())])
    values, lengths = torch.randn(9, 2), torch.tensor([2, 3, 4])
    explanation = pdyn.explain(f)(values, lengths)
    decisions = "\n".join(explanation.shape_decisions)
    assert "runtime assert Eq(u0 + u1 + u2, s0)" in decisions, decisions
    guard_source = explanation.guards[0]
    assert "u0" not in guard_source and "lengths.sum" not in guard_source


def test_split_along_a_later_dim_and_of_a_non_contiguous_tensor():
    def f(x, lengths):
        a = x.split(lengths.tolist(), dim=1)
        b = x.t().split(lengths.tolist())
        return [p * 2 for p in a], [p.sum(1) for p in b]
    calls = [(torch.randn(3, int(l.sum())), l) for l in (torch.tensor([1, 2, 3]), torch.tensor([0, 4, 2]),
                                                           torch.tensor([5, 1, 1]))]
    run(f, calls, graphs=1)


def test_split_of_a_tensor_that_requires_grad_keeps_the_grad():
    def f(values, lengths):
        return [p.sum() for p in values.split(lengths.tolist())]
    for lengths in (torch.tensor([1, 2]), torch.tensor([3, 0])):
        values = torch.randn(3, requires_grad=True)
        out = pdyn.optimize(f, backend="eager")(values, lengths)
        assert all(o.requires_grad for o in out)
        torch.stack(out).sum().backward()
        assert torch.equal(values.grad, torch.ones(3))


def test_many_features_stay_one_graph():
    def f(values, lengths):
        return torch.stack([p.sum(0) for p in values.split(lengths.tolist())])
    calls = []
    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        lengths = torch.randint(0, 5, (40,), generator=g)
        calls.append((torch.randn(int(lengths.sum()), 2, generator=g), lengths))
    run(f, calls, graphs=1)

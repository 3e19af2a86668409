"""In-place writes in training graphs (backends/autograd/writes.py): a write to a tensor the
graph made and nothing else views becomes its out-of-place op, so the graph trains on kernels;
a write eager's autograd would refuse at backward (the tensor was saved before the write), a write
through a view and a write to an input stay writes, and their graph runs with torch as eager."""

from __future__ import annotations

import pytest
import torch

import pdyn
from tests.backends.autograd_util import TrainRecorder, grad_input


def _both(fn, *shapes):
    """`fn` eagerly and under pdyn on equal leaves: (eager's error or None, pdyn's, leaves of each)."""
    ours = [grad_input(*s) for s in shapes]
    theirs = [t.detach().clone().requires_grad_() for t in ours]
    compiled = pdyn.optimize(fn, backend=TrainRecorder())
    errors = []
    for call, leaves in ((fn, theirs), (compiled, ours)):
        try:
            call(*leaves).sin().sum().backward()
            errors.append(None)
        except RuntimeError as e:
            errors.append(type(e))
    return errors, theirs, ours, pdyn.stats(compiled)


def test_writes_to_the_graphs_own_tensors_train_on_kernels_with_eagers_gradients():
    def f(x, w, b):
        h = x @ w
        h += b                                       # an augmented assignment (T5's position bias)
        m = torch.zeros(h.shape[0], h.shape[1])
        m.masked_fill_(x[:, :1] > 0, -1.0)           # a method write on a fresh tensor
        g = (h + m).sum(-1, keepdim=True)
        g.mul_(2)                                    # a write to a reduction's result
        h.add_(g * torch.ones((), dtype=torch.float64))  # a float64 operand: h stays float32
        return torch.tanh(h) * g

    errors, theirs, ours, stats = _both(f, (3, 4), (4, 5), (5,))
    assert errors == [None, None]
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad)
    assert stats["graphs_on_torch"] == 0 and stats["backward_graphs"] == 1


def test_item_assignments_to_a_fresh_tensor_train_on_kernels_with_eagers_gradients():
    def f(x, v):
        out = x.new_zeros(x.shape[0], x.shape[1] + 1)
        out[:, 1:] = x * 2          # gradient to x through the assignment
        out[:, 0] = v               # and to v
        return out * out

    errors, theirs, ours, stats = _both(f, (3, 4), (3,))
    assert errors == [None, None]
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad)
    assert stats["graphs_on_torch"] == 0 and stats["backward_graphs"] == 1


def test_a_mask_written_then_viewed_with_sizes_read_from_other_tensors_trains_on_kernels():
    def f(q, pad):
        mask = torch.zeros_like(pad, dtype=q.dtype)
        mask.masked_fill_(pad, float("-inf"))          # MultiheadAttention's padding mask
        b, n = q.shape[0], q.shape[1]                   # sizes of another tensor view nothing
        scores = q @ q.transpose(1, 2) + mask.view(b, 1, n).expand(b, n, n)
        return scores.softmax(-1)

    q = grad_input(2, 5, 4)
    pad = torch.tensor([[False] * 4 + [True], [False] * 5])
    ref = q.detach().clone().requires_grad_()
    compiled = pdyn.optimize(f, backend=TrainRecorder())
    compiled(q, pad).sin().sum().backward()
    f(ref, pad).sin().sum().backward()
    torch.testing.assert_close(q.grad, ref.grad)
    assert pdyn.stats(compiled)["graphs_on_torch"] == 0


def test_a_write_to_a_tensor_saved_for_backward_raises_at_backward_as_eager():
    def f(x):
        y = x.sigmoid()     # sigmoid's backward reads y
        y.mul_(2)
        return y

    errors, _, _, stats = _both(f, (3,))
    assert errors == [RuntimeError, RuntimeError]
    assert stats["graphs_on_torch"] == 1


@pytest.mark.parametrize("case", ["through_a_view", "read_by_mul_before"])
def test_writes_autograd_could_observe_stay_writes_and_match_eager(case):
    def through_a_view(x):
        h = x * 2
        h[:, 0] += 1        # a view of h is written: h's other readers see it
        return h * x

    def read_by_mul_before(x):
        h = x + 1
        k = h * x           # mul saves h for x's gradient: eager raises after the write
        h.add_(1)
        return k + h

    fn = {"through_a_view": through_a_view, "read_by_mul_before": read_by_mul_before}[case]
    errors, theirs, ours, stats = _both(fn, (3, 4))
    assert errors[0] == errors[1]
    if errors[0] is None:
        for a, b in zip(ours, theirs):
            torch.testing.assert_close(a.grad, b.grad)
    assert stats["graphs_on_torch"] == 1

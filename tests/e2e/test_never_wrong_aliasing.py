"""Mutation, aliasing and autograd as in eager: writes through views of inputs, results that are
inputs or views of them, gradients through a compiled function, and a graph that writes a tensor
autograd tracks and then raises."""

from __future__ import annotations

import pytest
import torch

import pdyn
from tests.helpers import check_calls

LOG: list = []


@pytest.fixture(autouse=True)
def empty_log():
    LOG.clear()
    yield
    LOG.clear()


@pytest.mark.parametrize("backend", ["eager", "triton"])
def test_writes_through_views_of_an_input_and_results_that_alias_it(backend):
    def f(x):
        x.t().add_(1)
        x[1:].mul_(2)
        v = x.view(-1)
        return x, v, x.contiguous(), x.reshape(-1)

    g = pdyn.optimize(f, backend=backend)
    for n in (4, 5, 6):
        xe, xp = torch.randn(n, 3), None
        xp = xe.clone()
        e, p = f(xe), g(xp)
        torch.testing.assert_close(xp, xe)
        assert p[0] is xp and p[2] is xp and p[1]._base is xp
        p[1].add_(100)                                  # a write through the returned view shows in x
        p[3].add_(1)
        e[1].add_(100)
        e[3].add_(1)
        torch.testing.assert_close(xp, xe)
    assert pdyn.stats(g)["compiles"] == 1 and pdyn.stats(g)["eager_fallbacks"] == 0


def test_gradients_through_a_compiled_function_with_an_in_place_write_to_a_non_leaf():
    def f(a, w):
        x = a * 1
        x[0].mul_(3)
        return (x @ w).relu().sum(), x

    g = pdyn.optimize(f, backend="eager")
    for n in (4, 5, 6):
        a, w = torch.randn(n, 3), torch.randn(3, 2)
        grads = []
        for fn in (f, g):
            ai, wi = a.clone().requires_grad_(), w.clone().requires_grad_()
            loss, x = fn(ai, wi)
            loss.backward()
            assert not x.is_leaf and x.requires_grad
            grads.append((ai.grad, wi.grad))
        torch.testing.assert_close(grads[1], grads[0])
    assert pdyn.stats(g)["graphs"] == 1 and pdyn.stats(g)["graph_breaks"] == 0


def test_module_buffers_written_in_train_and_read_in_eval():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = torch.nn.BatchNorm1d(3)
            self.register_buffer("calls", torch.zeros((), dtype=torch.long))

        def forward(self, x):
            self.calls += 1
            return self.bn(x) * self.calls

    torch.manual_seed(0)
    eager, compiled = M(), M()
    compiled.load_state_dict(eager.state_dict())
    g = pdyn.optimize(compiled, backend="eager")
    for n, train in ((4, True), (5, True), (6, False), (7, True)):
        eager.train(train)
        compiled.train(train)
        x = torch.randn(n, 3)
        torch.testing.assert_close(g(x), eager(x))
        for name, value in eager.state_dict().items():
            torch.testing.assert_close(compiled.state_dict()[name], value)


def write_then_index(x, i):
    LOG.append(x.shape[0])
    x.mul_(2)
    return torch.index_select(x, 0, i)   # an index out of range raises only when the graph runs


def test_a_graph_that_writes_a_tensor_autograd_tracks_and_raises_writes_it_once():
    """The graph writes `x` (a non-leaf that requires grad) and then raises, with a list append
    waiting after it: rerunning the frame eagerly after putting x's values back recorded the
    write twice in x's history (a.grad was 4, not 2). Such a frame runs eagerly."""
    def run(fn):
        out = []
        for idx in ([0], [9], [1]):
            a = torch.ones(3, requires_grad=True)
            x = a * 1
            try:
                fn(x, torch.tensor(idx))
            except IndexError:
                pass
            x.sum().backward()
            out.append((a.grad.tolist(), x._version))
        return out, list(LOG)

    expected = run(write_then_index)
    LOG.clear()
    g = pdyn.optimize(write_then_index, backend="eager")
    assert run(g) == expected
    assert pdyn.stats(g)["eager_fallbacks"] == 3 and pdyn.stats(g)["graphs"] == 0   # LOG's length recompiles


def test_a_graph_that_writes_without_autograd_and_raises_still_compiles():
    """The same frame with inputs that do not require grad (or a write under no_grad) keeps its
    graph: copying the written inputs back undoes the write before the eager rerun."""
    g = check_calls(write_then_index, (torch.ones(3), torch.tensor([0])), (torch.ones(4), torch.tensor([9])),
                    (torch.ones(5), torch.tensor([1])), compiles=3)   # LOG's length is guarded
    assert pdyn.stats(g)["eager_fallbacks"] == 0 and pdyn.stats(g)["graphs"] == 3
    assert LOG == [3, 3, 4, 4, 5, 5]

    def step(p, grad, i):
        LOG.append(1)
        with torch.no_grad():
            p.sub_(0.1 * grad)
        return torch.index_select(p, 0, i)

    g = pdyn.optimize(step, backend="eager")
    for i in ([0], [9], [1]):
        pe, pp = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
        results = []
        for fn, p in ((step, pe), (g, pp)):
            try:
                results.append(fn(p, torch.ones(3), torch.tensor(i)).tolist())
            except IndexError as e:
                results.append(str(e))
        assert results[0] == results[1]
        torch.testing.assert_close(pp, pe)
    assert pdyn.stats(g)["eager_fallbacks"] == 0 and pdyn.stats(g)["graphs"] == 3   # LOG's length again


def add_then_index(x, w, i):
    LOG.append(1)
    x.add_(w)                            # x, which needs no grad, takes w's history
    return torch.index_select(x, 0, i)


def test_a_write_that_gives_an_input_history_and_raises_happens_once():
    def run(fn):
        out = []
        for idx in ([0], [9], [1]):
            w = torch.ones(3, requires_grad=True)
            x = torch.zeros(3)
            try:
                fn(x, w, torch.tensor(idx))
            except IndexError:
                pass
            (x * x).sum().backward()
            out.append((w.grad.tolist(), x.tolist()))
        return out

    expected = run(add_then_index)
    g = pdyn.optimize(add_then_index, backend="eager")
    assert run(g) == expected
    assert pdyn.stats(g)["eager_fallbacks"] == 3 and pdyn.stats(g)["graphs"] == 0   # LOG's length recompiles

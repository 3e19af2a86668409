"""Training steps through pdyn's joint graphs behave as eager's: models in training mode (every
parameter's gradient), gradient accumulation, retain_graph, autograd.grad, no_grad inference of
the same module, requires_grad changes between calls, and the `backward_graphs` counter."""

from __future__ import annotations

import copy

import pytest
import torch

import pdyn
from tests.backends.autograd_util import TOLERANCE, TrainRecorder, grad_input


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.LayerNorm(16),
                               torch.nn.Dropout(0.2), torch.nn.Linear(16, 3))


def _assert_same_grads(model: torch.nn.Module, ref: torch.nn.Module) -> None:
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        assert (p.grad is None) == (q.grad is None), name
        if q.grad is not None:
            torch.testing.assert_close(p.grad, q.grad, **TOLERANCE, msg=name)


def _train_and_compare(model: torch.nn.Module, batches: list[dict], loss_of) -> TrainRecorder:
    ref = copy.deepcopy(model)
    rec = TrainRecorder()
    compiled = pdyn.optimize(model, backend=rec)
    for kwargs in batches:
        torch.manual_seed(11)
        loss = loss_of(compiled(**kwargs))
        loss.backward()
        torch.manual_seed(11)
        expected = loss_of(ref(**kwargs))
        expected.backward()
        torch.testing.assert_close(loss, expected, **TOLERANCE)
        _assert_same_grads(model, ref)
        model.zero_grad()
        ref.zero_grad()
    return rec


def test_mlp_with_dropout_trains_as_eager_over_batch_sizes_with_one_compile():
    model = _mlp().train()
    batches = [{"input": torch.randn(n, 6)} for n in (4, 7, 9)]
    rec = _train_and_compare(model, batches, lambda out: out.pow(2).mean())
    assert len(rec.compiled) == 1 and rec.joint is not None
    assert rec.compiled[-1].pdyn_backward is not None  # the backward ran through pdyn's wrapper


@pytest.mark.parametrize("name", ["gpt2_train", "bert_mlm_train"])
def test_transformer_training_step_gradients_match_eager_for_every_parameter(name):
    from model_suite.cases import CASES

    case = CASES[name]
    torch.manual_seed(0)
    model = case.build().train()
    rec = _train_and_compare(model, [case.inputs(2, 6, 0)], lambda out: out.loss)
    assert rec.joint.backward is not None


def test_gradient_accumulation_over_two_calls_matches_eager():
    model = _mlp().eval()
    ref = copy.deepcopy(model)
    compiled = pdyn.optimize(model, backend=TrainRecorder())
    for n in (3, 5):
        x = torch.randn(n, 6)
        compiled(x).sum().backward()
        ref(x).sum().backward()
    _assert_same_grads(model, ref)


def test_retain_graph_allows_a_second_backward_and_without_it_autograd_raises_as_eager():
    fn = pdyn.optimize(lambda x, w: (x @ w).tanh().sum(), backend=TrainRecorder())
    x, w = grad_input(3, 4), grad_input(4, 2)
    out = fn(x, w)
    out.backward(retain_graph=True)
    first = w.grad.clone()
    out.backward()
    torch.testing.assert_close(w.grad, 2 * first)
    out = fn(x, w)
    out.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


def test_autograd_grad_returns_eagers_gradients_and_leaves_grad_unset():
    def f(x, w):
        return (x @ w).softmax(-1)

    fn = pdyn.optimize(f, backend=TrainRecorder())
    x, w = grad_input(3, 4), grad_input(4, 5)
    out = fn(x, w)
    g = torch.randn_like(out)
    ours = torch.autograd.grad(out, (x, w), g)
    theirs = torch.autograd.grad(f(x, w), (x, w), g)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, **TOLERANCE)
    assert x.grad is None and w.grad is None


def test_no_grad_inference_of_the_trained_module_uses_its_own_entry_without_backward():
    model = _mlp().eval()
    ref = copy.deepcopy(model)
    rec = TrainRecorder()
    compiled = pdyn.optimize(model, backend=rec)
    x = torch.randn(4, 6)
    compiled(x).sum().backward()
    with torch.no_grad():
        out = compiled(x)
        expected = ref(x)
    assert not out.requires_grad
    torch.testing.assert_close(out, expected, **TOLERANCE)
    stats = pdyn.stats(compiled)
    assert stats["compiles"] == 2 and stats["backward_graphs"] == 1
    assert getattr(rec.compiled[-1], "pdyn_joint", None) is None  # the inference graph: kernels only
    compiled(x).sum().backward()  # training again: the first entry, no compile
    assert pdyn.stats(compiled)["compiles"] == 2


def test_requires_grad_change_between_calls_recompiles_and_grads_follow():
    def f(x, w):
        return (x * w).sin().sum()

    fn = pdyn.optimize(f, backend=TrainRecorder())
    x, w = grad_input(3, 4), grad_input(3, 4)
    fn(x, w).backward()
    torch.testing.assert_close(w.grad, (x * w).cos().detach() * x.detach())
    w2 = w.detach().clone()  # frozen now
    x.grad = None
    fn(x, w2).backward()
    torch.testing.assert_close(x.grad, (x * w2).cos().detach() * w2)
    assert w2.grad is None
    stats = pdyn.stats(fn)
    assert stats["compiles"] == 2 and stats["backward_graphs"] == 2


LOG: list = []


def test_an_input_no_gradient_reaches_is_not_an_edge_into_an_earlier_calls_graph():
    """A global list of graph outputs becomes inputs of the next call's graph (its guards read
    them) without reaching its outputs: the backward of the second call must not walk into the
    first call's graph, whose saved tensors its own backward freed (fuzz --grad seed 235)."""
    def f(x, y):
        y.clone().zero_()  # an in-place op: this graph runs with torch
        if (y ** 2).sum().item() > 1e9:  # a break: the rest is a resume function, which reads LOG whole
            x = x + 1
        LOG.append(x * 2)
        return torch.maximum(x, x).sin()

    LOG.clear()
    fn = pdyn.optimize(f, backend=TrainRecorder())
    for _ in range(3):
        x = grad_input(4, 3)
        out = fn(x, grad_input(2))
        assert sum(e[0] is not None for e in out.grad_fn.next_functions) == 1  # x alone
        out.sum().backward()
        torch.testing.assert_close(x.grad, x.detach().cos())
    assert [t.requires_grad for t in LOG] == [True] * 3
    LOG.clear()


def test_fuzz_grad_seed_235_a_log_of_outputs_read_by_the_next_call():
    from tests.fuzz.program import T
    from tests.fuzz.runner import assert_matches_eager
    source = """
        def f(x0, r):
            global COUNTER
            c1 = r.clone()
            c1.zero_()
            t2 = x0 ** 2
            b3 = t2.sum().item()
            o4 = t2
            LOG.append(r * 1)
            t15 = torch.maximum(r, r)
            return t15
    """
    assert_matches_eager(source, [(T((2,)), T((4, 3)))] * 2, backend="triton", grad=True)


def test_a_training_graph_traced_under_autocast_runs_with_torch_with_eagers_gradients():
    """Autocast entered by the caller: the graph's ops carry bfloat16 results without casts, which
    derivative rules cannot differentiate (the backward crashed on a dtype mismatch): torch runs
    it, counted; the same module without autocast compiles its own entry and trains on kernels."""
    model = _mlp().eval()
    ref = copy.deepcopy(model)
    compiled = pdyn.optimize(model, backend=TrainRecorder())
    x = torch.randn(5, 6)
    for fn in (compiled, ref):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = fn(x)
        assert out.dtype == torch.bfloat16
        out.float().sum().backward()
    _assert_same_grads(model, ref)
    assert pdyn.stats()["graphs_on_torch"] == 1
    compiled(x).sum().backward()
    assert pdyn.stats()["compiles"] == 2 and pdyn.stats()["backward_graphs"] == 1

"""torch.autograd.Function.apply traced as one graph node (pdyn/trace/variables/torch/autograd_function.py):
values and gradients equal eager's over calls with changing sizes, one graph, no break."""

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend, assert_same, check_calls


class TimesThree(torch.autograd.Function):
    """A backward that is not forward's true gradient: only running this backward matches eager."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2 + x.shape[0]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 + x


class ScaleSplit(torch.autograd.Function):
    """setup_context style, a non-tensor argument, two outputs, one non-differentiable."""

    @staticmethod
    def forward(x, y, scale):
        return x * scale + y, (x > 0).float()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.scale = inputs[2]
        ctx.mark_non_differentiable(output[1])

    @staticmethod
    def backward(ctx, grad, _mask_grad):
        return grad * ctx.scale, grad * 0.5, None


class Clamped(torch.autograd.Function):
    """The ctx forms forward code uses: attributes, needs_input_grad, mark_non_differentiable."""

    @staticmethod
    def forward(ctx, x, lo):
        ctx.lo = lo
        ctx.was_needed = ctx.needs_input_grad[0]
        out = x.clamp(min=lo)
        mask = out > lo
        ctx.mark_non_differentiable(mask)
        ctx.save_for_backward(mask)
        return out, mask

    @staticmethod
    def backward(ctx, grad, _):
        (mask,) = ctx.saved_tensors
        return grad * mask, None


class WritesInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad


times_three = TimesThree.apply  # a Function's apply kept as a global, as libraries do


def optimized_run(fn, *args):
    backend = CountingBackend()
    opt = pdyn.optimize(fn, backend=backend)
    return opt, backend


def grads_match(fn, shapes_per_call, *, graphs=1, compiles=None, requires=None):
    """Each call: fresh leaf inputs (same values eager and pdyn), outputs and every input's gradient
    after `sum(outputs).backward()` equal eager's."""
    backend = CountingBackend()
    opt = pdyn.optimize(fn, backend=backend)
    for call, shapes in enumerate(shapes_per_call):
        torch.manual_seed(call)
        values = [torch.randn(s) for s in shapes]
        flags = requires or [True] * len(values)
        eager_in = [v.clone().requires_grad_(f) for v, f in zip(values, flags)]
        opt_in = [v.clone().requires_grad_(f) for v, f in zip(values, flags)]
        expected, actual = fn(*eager_in), opt(*opt_in)
        assert_same(actual, expected, f"call {call}")
        outs_e = [o for o in (expected if isinstance(expected, tuple) else (expected,)) if o.requires_grad]
        outs_a = [o for o in (actual if isinstance(actual, tuple) else (actual,)) if o.requires_grad]
        assert len(outs_a) == len(outs_e), f"call {call}: outputs requiring grad"
        if outs_e:
            sum(o.sum() for o in outs_e).backward()
            sum(o.sum() for o in outs_a).backward()
        for i, (a, e) in enumerate(zip(opt_in, eager_in)):
            assert (a.grad is None) == (e.grad is None), f"call {call}: grad of input {i}"
            if e.grad is not None:
                torch.testing.assert_close(a.grad, e.grad)
    stats = pdyn.stats(opt)
    assert stats["graph_breaks"] == 0 and stats["eager_fallbacks"] == 0, stats
    assert len(backend.graphs) == graphs * stats["compiles"], (len(backend.graphs), stats)
    if compiles is not None:
        assert stats["compiles"] == compiles, stats
    return backend


def apply_nodes(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and type(n.target).__name__ == "ApplyFunction"]


def test_custom_backward_runs_and_sizes_stay_symbolic():
    def f(x):
        return TimesThree.apply(x.sin()).cos()

    backend = grads_match(f, [[(3, 4)], [(5, 4)], [(7, 4)], [(2, 4)]], compiles=1)
    last = backend.graphs[-1]
    assert len(apply_nodes(last)) == 1  # forward's own ops are not in the graph
    assert [n.target for n in last.graph.nodes if n.op == "call_method" and n.target != "size"] == ["sin", "cos"]


def test_apply_kept_as_a_global():
    def f(x):
        return times_three(x) + 1

    grads_match(f, [[(3,)], [(6,)], [(9,)]], compiles=1)


def test_setup_context_non_tensor_argument_two_outputs():
    def f(x, y):
        out, mask = ScaleSplit.apply(x, y, 1.5)
        return out * 2, mask

    grads_match(f, [[(4, 2), (4, 2)], [(6, 2), (6, 2)], [(3, 2), (3, 2)]], compiles=1)


def test_ctx_attributes_needs_input_grad_and_non_differentiable():
    def f(x):
        out, mask = Clamped.apply(x, 0.1)
        return out + 1, mask

    grads_match(f, [[(5,)], [(8,)], [(3,)]], compiles=1)
    grads_match(f, [[(5,)], [(8,)]], requires=[False])  # nothing requires grad: outputs neither


def test_under_no_grad_outputs_do_not_require_grad():
    def f(x):
        with torch.no_grad():
            y = TimesThree.apply(x)
        return y, TimesThree.apply(x)

    x = torch.randn(4, requires_grad=True)
    opt, backend = optimized_run(f)
    actual, expected = opt(x), f(x)
    assert_same(actual, expected)
    assert [t.requires_grad for t in actual] == [False, True]
    assert len(backend.graphs) == 1 and len(apply_nodes(backend.graphs[0])) == 2


def test_fullgraph_and_graph_contents():
    def f(x, w):
        return torch.relu(ScaleSplit.apply(x @ w, x @ w, 2.0)[0])

    opt = pdyn.optimize(f, backend="eager", fullgraph=True)
    x, w = torch.randn(3, 4), torch.randn(4, 4)
    assert_same(opt(x, w), f(x, w))
    check_calls(f, (x, w), (torch.randn(5, 4), w), (torch.randn(2, 4), w), compiles=1)


def test_a_forward_that_writes_its_input_breaks_and_stays_right():
    def f(x):
        y = x * 1
        return WritesInput.apply(y) + y

    check_calls(f, (torch.randn(3),), (torch.randn(5),))
    reasons = pdyn.explain(f)(torch.randn(3)).break_reasons
    assert [r.reason for r in reasons] == ["pdyn cannot trace WritesInput.apply(): its forward writes a tensor "
                                           "it did not make"]


def test_an_overridden_apply_is_not_the_node():
    class Custom(TimesThree):
        @classmethod
        def apply(cls, x):
            return super().apply(x) + 1

    def f(x):
        return Custom.apply(x)

    x = torch.randn(3, requires_grad=True)
    opt, _ = optimized_run(f)
    assert_same(opt(x), f(x))


@pytest.mark.parametrize("requires", [[True], [False]])
def test_forward_branching_on_needs_input_grad(requires):
    class Branchy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2 if ctx.needs_input_grad[0] else x * 3

        @staticmethod
        def backward(ctx, grad):
            return grad

    def f(x):
        return Branchy.apply(x)

    grads_match(f, [[(3,)], [(4,)]], requires=requires)

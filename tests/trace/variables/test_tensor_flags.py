"""`x.requires_grad = flag`, `x.requires_grad_()` and `x.is_inference()` in the trace
(pdyn/trace/variables/torch/tensor.py): outputs' requires_grad and the errors equal eager's, no break."""

import pytest
import torch

import pdyn
from pdyn.guards.tensor_guards import InferenceTensorGuard
from tests.helpers import CountingBackend, assert_same, check_calls


def one_graph(fn, *calls, compiles=1):
    opt = check_calls(fn, *calls, compiles=compiles)
    stats = pdyn.stats(opt)
    assert (stats["graph_breaks"], stats["eager_fallbacks"]) == (0, 0), stats
    return opt


def test_setting_requires_grad_on_a_tensor_the_graph_made():
    def f(x):
        y = x[:, None] * 2
        y.requires_grad = True
        z = (y * 3).sum(-1)
        return z, y.requires_grad, z.requires_grad

    one_graph(f, (torch.randn(3, 4),), (torch.randn(5, 4),), (torch.randn(2, 4),))


def test_requires_grad_false_and_the_method_form():
    def f(x):
        y = x.detach()
        y.requires_grad = False
        w = (x * 2).detach().requires_grad_()
        return y + 1, w * 2

    one_graph(f, (torch.randn(3, requires_grad=True),), (torch.randn(6, requires_grad=True),))


def test_gradient_flows_from_a_flag_set_in_the_graph():
    def f(x):
        y = x * 2
        y.requires_grad = True
        return (y.sin() * 3).sum(), y

    opt = pdyn.optimize(f, backend="eager")
    for n in (3, 5):
        x = torch.randn(n)
        (loss_e, y_e), (loss_a, y_a) = f(x), opt(x)
        y_e.retain_grad(), y_a.retain_grad()
        assert_same(loss_a, loss_e)
        # y is a leaf of the graph the loss was built from: its grad is readable after backward
        loss_e.backward(), loss_a.backward()
        torch.testing.assert_close(y_a.grad, y_e.grad)


@pytest.mark.parametrize("case", ["non_leaf_true", "non_leaf_false", "int_dtype", "not_bool"])
def test_setter_errors_are_eagers(case):
    def f(x):
        if case == "int_dtype":
            y = x.long()
            y.requires_grad = True
        elif case == "not_bool":
            y = x * 1
            y.requires_grad = 1
        else:
            y = x * 2
            y.requires_grad = case == "non_leaf_true"
        return y

    check_calls(f, (torch.randn(3, requires_grad=True),), (torch.randn(4, requires_grad=True),))


def test_setting_it_on_an_input_changes_the_input_as_eager_does():
    def f(x):
        x.requires_grad = True
        return x * 2

    opt = pdyn.optimize(f, backend="eager")
    x_e = torch.randn(3)
    x_a = x_e.clone()
    assert_same(opt(x_a), f(x_e))
    assert x_a.requires_grad and x_e.requires_grad
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_is_inference_of_made_tensors_and_inputs():
    def f(x):
        with torch.inference_mode():
            y = x * 2
        flags = (x.is_inference(), y.is_inference(), (x + 1).is_inference())
        return (x + 1 if y.is_inference() else x - 1), flags

    with torch.inference_mode():
        inference_input = torch.randn(3)
    backend = CountingBackend()
    opt = pdyn.optimize(f, backend=backend)
    for x in (torch.randn(3), torch.randn(4), inference_input):
        assert_same(opt(x), f(x))
    stats = pdyn.stats(opt)
    assert (stats["graph_breaks"], stats["compiles"]) == (0, 2), stats  # the inference input recompiles
    assert any("L['x'] is not an inference tensor" in g for g in pdyn.explain(f)(torch.randn(3)).guards)


def test_inference_guard_sentence():
    from pdyn.sources import LocalSource
    guard = InferenceTensorGuard(LocalSource("x"), True)
    assert guard.sentence() == "L['x'] is an inference tensor"
    assert guard.fail_expr("x", lambda obj, name: name) == "x.is_inference() is not True"

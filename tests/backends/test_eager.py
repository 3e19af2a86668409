"""The eager backend and backend name resolution (pdyn/backends/eager.py, pdyn/backends/__init__.py)."""

import operator

import pytest
import torch
import torch.fx

import pdyn
from pdyn.backends import BACKENDS, resolve
from pdyn.backends.eager import eager


def add_relu_graph():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    y = graph.placeholder("y")
    added = graph.call_function(operator.add, (x, y))
    graph.output((graph.call_function(torch.relu, (added,)),))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def test_eager_backend_returns_the_graph_modules_forward():
    gm = add_relu_graph()
    compiled = eager(gm, [torch.ones(2), torch.ones(2)])
    assert compiled == gm.forward


def test_eager_backend_runs_the_graph_with_torch():
    compiled = eager(add_relu_graph(), [torch.ones(3), torch.ones(3)])
    (out,) = compiled(torch.tensor([1.0, -3.0, 2.0]), torch.tensor([1.0, 1.0, -5.0]))
    torch.testing.assert_close(out, torch.tensor([2.0, 0.0, 0.0]))


def test_eager_backend_runs_other_sizes_than_its_examples():
    compiled = eager(add_relu_graph(), [torch.ones(3), torch.ones(3)])
    (out,) = compiled(torch.ones(5, 2), -torch.ones(5, 2) * 2)
    assert out.shape == (5, 2) and out.sum().item() == 0


def test_resolve_by_name():
    assert resolve("eager") is eager
    assert resolve("triton") is BACKENDS["triton"] and BACKENDS["triton"] is not eager


def test_resolve_auto_is_triton_with_cuda_and_eager_without():
    expected = "triton" if torch.cuda.is_available() else "eager"
    assert resolve("auto") is BACKENDS[expected]


def test_resolve_keeps_a_callable():
    def my_backend(gm, example_inputs):
        return gm.forward

    assert resolve(my_backend) is my_backend


def test_resolve_of_an_unknown_name_is_a_user_error_listing_the_names():
    with pytest.raises(pdyn.UserError, match="unknown backend 'fast'") as error:
        resolve("fast")
    assert "'eager'" in str(error.value) and "'triton'" in str(error.value)


def test_optimize_with_an_unknown_backend_name_fails_at_once():
    with pytest.raises(pdyn.UserError):
        pdyn.optimize(lambda x: x, backend="nope")


def test_optimize_with_the_eager_backend_matches_eager_results():
    def f(x, y):
        return torch.relu(x + y) * 2

    fn = pdyn.optimize(f, backend="eager")
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    torch.testing.assert_close(fn(x, y), f(x, y))
    torch.testing.assert_close(fn(x[:2], y[:2]), f(x[:2], y[:2]))
    assert pdyn.stats(fn)["compiles"] == 1

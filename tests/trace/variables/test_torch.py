"""Trackers for torch's API and Python modules: torch functions record nodes, modules are
namespaces (pdyn/variables/torch/torch_functions.py)."""

import math

import pytest
import torch
import torch.nn.functional as F

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import EqualsGuard, IdGuard
from pdyn.sources import AttrSource, GlobalSource
from pdyn.trace.variables.torch.torch_functions import PythonModuleVariable, TorchFunctionVariable, is_torch_function
from tests.tracing import assert_graph, guards_of, trace


def test_torch_function_records_a_call_function_node():
    def f(x, y):
        return torch.cat([torch.relu(x), y], dim=-1)

    tx = trace(f, torch.ones(2), torch.ones(3))
    assert_graph(tx, """
        x = placeholder L['x']
        y = placeholder L['y']
        relu = torch.relu(x)
        cat = torch.cat([relu, y], dim=-1)
    """)
    assert [str(s) for s in tx.result.sizes] == ["s0 + s1"]


def test_functional_namespace_function_records_a_node():
    def f(x):
        return F.softmax(x, dim=-1)

    tx = trace(f, torch.ones(2, 3))
    assert_graph(tx, """
        x = placeholder L['x']
        softmax = F.softmax(x, dim=-1)
    """)


def test_torch_factory_with_symbolic_sizes_keeps_them():
    def f(x):
        return torch.zeros(x.size(0) * 2, 3)

    tx = trace(f, torch.ones(5))
    assert [str(s) for s in tx.result.sizes] == ["2*s0", "3"]
    assert tx.ctx.shape_env.specialized == {}


def test_is_grad_enabled_is_a_constant():
    def f(x):
        return torch.is_grad_enabled()

    assert trace(f, torch.ones(1)).result.as_python_constant() is torch.is_grad_enabled()


def test_constant_question_about_a_tensor_is_folded():
    def f(x):
        return torch.is_floating_point(x), torch.is_tensor(x)

    tx = trace(f, torch.ones(1))
    assert tx.result.as_python_constant() == (True, True)
    assert [n.op for n in tx.output.graph.nodes] == ["placeholder"]


@pytest.mark.parametrize("call", [lambda x: torch.manual_seed(0), lambda x: torch.cuda.synchronize(),
                                  lambda x: torch.autograd.grad(x, x)])
def test_function_that_changes_state_outside_the_graph_is_unsupported(call):
    def f(x):
        return call(x)

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "torch_function" and error.value.hint


def test_out_argument_is_unsupported_at_the_users_line():
    def f(x, y):
        return torch.add(x, 1, out=y)

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1), torch.ones(1))
    assert error.value.key == "out_argument"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_is_torch_function():
    assert is_torch_function(torch.relu) and is_torch_function(F.linear) and is_torch_function(torch.add)
    assert not is_torch_function(torch.nn.Linear.forward)
    assert not is_torch_function(torch.nn.Linear) and not is_torch_function(len)


def test_torch_module_attributes_are_not_guarded():
    def f(x):
        return torch.nn.functional.relu(x)

    tx = trace(f, torch.ones(1))
    assert [g.source for g in guards_of(tx, IdGuard)] == [GlobalSource("torch")]


def test_other_module_attributes_are_read_through_sources_and_guarded():
    def f(x):
        return x * math.pi

    tx = trace(f, torch.ones(1))
    pi = [g for g in guards_of(tx, EqualsGuard) if g.source == AttrSource(GlobalSource("math"), "pi")]
    assert len(pi) == 1 and pi[0].value == math.pi


def test_missing_module_attribute_raises_attribute_error():
    def f(x):
        return torch.not_a_function(x)

    with pytest.raises(UserException) as error:
        trace(f, torch.ones(1))
    assert isinstance(error.value.exc, AttributeError)


def test_module_and_function_trackers():
    assert PythonModuleVariable(math).python_type() is type(math)
    assert repr(PythonModuleVariable(torch)) == "PythonModuleVariable(torch)"
    assert repr(TorchFunctionVariable(torch.relu)) == "TorchFunctionVariable(relu)"


def test_op_that_raises_at_trace_time_is_the_users_exception():
    def f(x, y):
        return torch.matmul(x, y)

    with pytest.raises(UserException) as error:
        trace(f, torch.ones(2, 3), torch.ones(2, 3))
    assert isinstance(error.value.exc, RuntimeError)
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1

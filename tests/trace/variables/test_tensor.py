"""TensorVariable: sizes as SymIntVariables for dynamic dims and constants for static ones,
metadata as constants, methods and operators as graph nodes (pdyn/variables/torch/tensor.py)."""

import pytest
import torch

import pdyn
from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import SizeVariable
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.tensor import NamedTupleVariable, TensorVariable, is_tensor_method
from tests.tracing import assert_graph, trace


def exprs(vt):
    return [str(i.expr) if isinstance(i, SymIntVariable) else i.as_python_constant() for i in vt.items]


def static_middle() -> torch.Tensor:
    """A (4, 1, 6) tensor whose size-1 dim is marked static (a size 1 is otherwise a symbol)."""
    x = torch.ones(4, 1, 6)
    pdyn.mark_static(x, 1)
    return x


def test_shape_has_sym_ints_for_dynamic_dims_and_constants_for_static_ones():
    def f(x):
        return x.shape, x.size()

    tx = trace(f, static_middle())
    shape, size = tx.result.items
    assert isinstance(shape, SizeVariable) and isinstance(size, SizeVariable)
    assert exprs(shape) == ["s0", 1, "s1"] and exprs(size) == ["s0", 1, "s1"]
    assert tx.ctx.shape_env.specialized == {}


def test_size_of_a_dim_and_negative_dims():
    def f(x):
        return x.size(0), x.size(-1), x.size(1), x.shape[-2]

    tx = trace(f, static_middle())
    first, last, one, middle = tx.result.items
    assert isinstance(first, SymIntVariable) and str(first.expr) == "s0" and str(last.expr) == "s1"
    assert isinstance(one, ConstantVariable) and one.value == 1 and middle.as_python_constant() == 1


def test_size_node_is_made_only_when_the_graph_needs_it():
    def f(x):
        return x.new_zeros(x.size(1))

    tx = trace(f, torch.ones(2, 5))
    assert_graph(tx, """
        x = placeholder L['x']
        size = x.size(1)
        new_zeros = x.new_zeros(size)
    """)


def test_size_of_a_dim_out_of_range_raises_index_error():
    def f(x):
        return x.size(2)

    with pytest.raises(UserException) as error:
        trace(f, torch.ones(2, 3))
    assert isinstance(error.value.exc, IndexError)


def test_numel_and_len_are_symbolic_for_dynamic_dims():
    def f(x):
        return x.numel(), len(x), x.dim(), x.ndim

    tx = trace(f, static_middle())
    numel, length, dim, ndim = tx.result.items
    assert str(numel.expr) == "s0*s1" and numel.hint() == 24
    assert str(length.expr) == "s0"
    assert (dim.as_python_constant(), ndim.as_python_constant()) == (3, 3)


def test_numel_of_static_dims_is_a_constant():
    def f(x):
        return x.numel()

    assert trace(f, torch.ones(1, 1)).result.as_python_constant() == 1


def test_len_of_a_0d_tensor_raises_type_error():
    def f(x):
        return x.__len__()

    with pytest.raises(UserException) as error:
        trace(f, torch.tensor(2.0))
    assert isinstance(error.value.exc, TypeError)


def test_stride_of_a_contiguous_input_is_its_later_sizes():
    def f(x):
        return x.stride()

    tx = trace(f, torch.ones(3, 4))
    size1 = tx.ctx.shape_env.simplify(tx.output.inputs[0].sizes[1])
    assert [str(s.expr) if hasattr(s, "expr") else s.as_python_constant() for s in tx.result.items] == [str(size1), 1]
    assert not tx.ctx.shape_env.specialized   # the dims are guarded off 0 and 1 instead


def test_metadata_attributes_are_constants():
    def f(x):
        return x.dtype, x.device, x.requires_grad, x.is_cuda

    tx = trace(f, torch.ones(2, dtype=torch.float64))
    assert tx.result.as_python_constant() == (torch.float64, torch.device("cpu"), False, False)
    assert [n.op for n in tx.output.graph.nodes] == ["placeholder"]


def test_methods_and_operators_record_nodes():
    def f(x):
        return x.sum(dim=-1).neg() @ x, x[0]

    tx = trace(f, torch.ones(3, 3))
    assert_graph(tx, """
        x = placeholder L['x']
        sum_1 = x.sum(dim=-1)
        neg = sum_1.neg()
        matmul = operator.matmul(neg, x)
        getitem = operator.getitem(x, 0)
    """)


def test_in_place_method_returns_the_same_tracker():
    def f(x):
        y = x * 1
        return y.add_(1) is y

    tx = trace(f, torch.ones(2))
    assert tx.result.as_python_constant() is True
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 1)
        add = mul.add_(1)
    """)


def test_unbound_tensor_method_takes_the_tensor_first():
    def f(x):
        return torch.Tensor.add(x, 2)

    tx = trace(f, torch.ones(2))
    assert_graph(tx, """
        x = placeholder L['x']
        add = x.add(2)
    """)


def test_unbound_tensor_method_without_a_tensor_is_unsupported():
    def f(x):
        return torch.Tensor.add(1, x)

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "tensor_method"


def test_structseq_result_has_named_fields():
    def f(x):
        out = x.max(0)
        return out.values, out.indices, out[0]

    tx = trace(f, torch.ones(3, 4))
    assert isinstance(tx.locals["out"], NamedTupleVariable)
    values, indices, first = tx.result.items
    assert values is first and values.node.name == "getitem" and indices.node.name == "getitem_1"


@pytest.mark.parametrize("method, key", [("item", "data_dependent"), ("tolist", "data_dependent"),
                                         ("backward", "tensor_method"), ("storage_offset", "tensor_method")])
def test_methods_that_leave_the_graph_are_unsupported(method, key):
    def f(x):
        return getattr(x, method)()

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == key


def test_grad_attribute_and_branching_on_a_tensor_are_unsupported():
    def f(x):
        return x.grad

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "tensor_grad"

    def g(x):
        return 1 if x else 0

    with pytest.raises(Unsupported) as error:
        trace(g, torch.ones(1))
    assert error.value.key == "data_dependent_branch"
    assert error.value.loc.lineno == g.__code__.co_firstlineno + 1


def test_missing_attribute_raises_attribute_error():
    def f(x):
        return x.nope

    with pytest.raises(UserException) as error:
        trace(f, torch.ones(1))
    assert isinstance(error.value.exc, AttributeError)


def test_iterating_a_tensor_specializes_its_rows_only():
    def f(x):
        return list(x)

    tx = trace(f, torch.ones(2, 7))
    assert len(tx.result.items) == 2
    assert [str(s) for s in tx.ctx.shape_env.specialized] == ["s0"]


def test_op_outputs_carry_symbolic_sizes_and_input_sources():
    def f(x, y):
        return torch.cat([x, y], dim=0)

    tx = trace(f, torch.ones(2, 3), torch.ones(4, 3))
    out = tx.result
    assert isinstance(out, TensorVariable)
    assert [str(s) for s in out.sizes] == ["s0 + s2", "s1"]
    assert {s.expr() for s in out.input_sources} == {"L['x']", "L['y']"}


def test_is_tensor_method():
    assert is_tensor_method(torch.Tensor.add) and is_tensor_method(torch.Tensor.size)
    assert not is_tensor_method(torch.add) and not is_tensor_method(len) and not is_tensor_method(torch.Tensor)


def test_transpose_attribute_keeps_dims_symbolic():
    def f(x):
        return x.T

    tx = trace(f, torch.ones(3, 4))
    assert [str(s) for s in tx.result.sizes] == ["s1", "s0"]
    assert tx.ctx.shape_env.specialized == {}

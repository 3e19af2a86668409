"""Op arguments in their three forms: fx node arguments, fake values, symbolic values
(pdyn/variables/torch/fx_args.py)."""

import pytest
import sympy
import torch
from torch._subclasses.fake_tensor import FakeTensor

from pdyn.base.errors import Unsupported
from pdyn.ops.shape_rules import SymTensor
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import DictVariable, ListVariable, SizeVariable, SliceVariable, TupleVariable
from pdyn.trace.variables.torch.fx_args import as_fake, as_node, as_symbolic
from pdyn.trace.variables.objects.nn_module import UserObjectVariable
from tests.tracing import trace


def pair(x, n):
    return x, n


@pytest.fixture
def traced():
    tx = trace(pair, torch.ones(4, 3), 7)
    return tx, tx.locals["x"], tx.locals["n"]


def test_tensor_is_its_node_its_fake_value_and_its_symbolic_sizes(traced):
    tx, x, _ = traced
    assert as_node(x) is x.node
    fake = as_fake(x)
    assert isinstance(fake, FakeTensor) and fake.shape == (4, 3)
    sym = as_symbolic(x)
    assert isinstance(sym, SymTensor) and [str(s) for s in sym.sizes] == ["s0", "s1"]
    assert sym.dtype is torch.float32


def test_symbolic_int_is_a_placeholder_its_hint_and_its_expression(traced):
    tx, _, n = traced
    node = as_node(n)
    assert node.op == "placeholder" and node.meta["source"].expr() == "L['n']"
    assert as_fake(n) == 7
    assert as_symbolic(n) == sympy.Symbol("s2", integer=True)


def test_pinned_symbolic_int_is_a_number_in_every_form(traced):
    tx, _, n = traced
    n.value_read("a test")
    assert as_node(n) == 7 and as_fake(n) == 7 and as_symbolic(n) == 7


def test_containers_convert_item_by_item(traced):
    tx, x, n = traced
    args = TupleVariable([x, ListVariable([n, ConstantVariable(2)]), DictVariable({"k": x})])
    assert as_node(args) == (x.node, [n.node, 2], {"k": x.node})
    fake = as_fake(args)
    assert fake[1] == [7, 2] and isinstance(fake[2]["k"], FakeTensor)


def test_size_and_slice_convert_to_a_tuple_and_a_slice(traced):
    tx, x, n = traced
    size = SizeVariable([ConstantVariable(2), n])
    assert as_fake(size) == (2, 7)
    assert as_symbolic(size) == (2, sympy.Symbol("s2", integer=True))
    s = SliceVariable([ConstantVariable(None), n, ConstantVariable(None)])
    assert as_fake(s) == slice(None, 7, None)
    assert as_node(s) == slice(None, n.node, None)


def test_constant_is_its_value_in_every_form():
    c = ConstantVariable(torch.float16)
    assert as_node(c) is as_fake(c) is as_symbolic(c) is torch.float16


def test_object_that_is_not_an_op_argument_is_unsupported(traced):
    tx, _, _ = traced
    with pytest.raises(Unsupported) as error:
        as_node(UserObjectVariable(object(), None))
    assert error.value.key == "op_argument"


def test_tensor_op_on_an_object_in_a_trace_is_unsupported():
    class Obj:
        pass

    def f(x, o):
        return torch.add(x, o)

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1), Obj())
    assert error.value.key == "op_argument"

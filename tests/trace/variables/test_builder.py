"""Wrapping frame values as trackers, and the guards each kind of input gets
(pdyn/variables/builder.py)."""

import collections
import dataclasses
import functools
import math

import pytest
import torch

from pdyn.trace.translator import InstructionTranslator
from pdyn.base.config import Config
from pdyn.base.errors import Unsupported
from pdyn.guards.guards import AliasGuard, DictKeysGuard, EqualsGuard, IdGuard, LenGuard, TypeGuard
from pdyn.guards.tensor_guards import TensorGuard
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.context import TraceContext
from pdyn.shapes.trace_plan import TracePlan
from pdyn.sources import AttrSource, ItemSource, LocalSource
from pdyn.trace.variables.builder import wrap, wrap_constant_result
from pdyn.trace.variables.values.constant import ConstantVariable, ObjectConstantVariable
from pdyn.trace.variables.containers.core import DictVariable, ListVariable, SizeVariable, TupleVariable
from pdyn.trace.variables.containers.sets import SetVariable
from pdyn.trace.variables.builtins import BuiltinVariable, ClassVariable
from pdyn.trace.variables.functions.user_functions import PartialVariable, UserFunctionVariable, UserMethodVariable
from pdyn.trace.variables.objects.nn_module import NNModuleVariable, UserObjectVariable
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.tensor import TensorUnboundMethodVariable, TensorVariable
from pdyn.trace.variables.torch.torch_functions import PythonModuleVariable, TorchFunctionVariable

X = LocalSource("x")


@dataclasses.dataclass(frozen=True)
class ValueKey:
    n: int


def noop(x):
    return x


def tracer(plan=None):
    return InstructionTranslator(noop.__code__, {}, globals(), OutputGraph("noop", TraceContext(plan)), Config())


def guards(tx):
    return [g for g in tx.ctx.guards if type(g).__name__ != "GradModeGuard"]


class Config_:
    lr = 0.1

    def scaled(self, v):
        return v * self.lr


def test_tensor_gets_a_placeholder_and_a_tensor_guard_with_dynamic_dims_none():
    tx = tracer()
    vt = wrap(tx, torch.ones(4, 0, 1, 3), X)
    assert isinstance(vt, TensorVariable) and vt.node.op == "placeholder"
    assert [str(s) for s in vt.sizes] == ["s0", "0", "s1", "s2"]   # 0 is a constant, 1 a symbol
    (guard,) = guards(tx)
    assert isinstance(guard, TensorGuard) and guard.source == X
    assert guard.sizes == (None, 0, None, None) and guard.strides is None and guard.contiguous is True
    assert (guard.dtype, guard.device, guard.requires_grad) == (torch.float32, torch.device("cpu"), False)


def test_tensor_with_only_static_dims_guards_sizes_and_strides():
    tx2 = tracer(TracePlan(False, "value", frozenset()))
    wrap(tx2, torch.ones(3, 5).t(), X)
    (guard,) = guards(tx2)
    assert guard.sizes == (5, 3) and guard.strides == (1, 5) and guard.contiguous is None


def test_non_contiguous_tensor_with_dynamic_dims_guards_that_it_is_not_contiguous():
    tx = tracer()
    wrap(tx, torch.ones(3, 5).t(), X)
    (guard,) = guards(tx)
    assert guard.sizes == (None, None) and guard.contiguous is False


def test_parameter_keeps_its_type_and_static_sizes():
    tx = tracer()
    vt = wrap(tx, torch.nn.Parameter(torch.ones(4, 3)), X)
    (guard,) = guards(tx)
    assert vt.python_type() is torch.nn.Parameter and guard.type is torch.nn.Parameter
    assert guard.sizes == (4, 3) and guard.requires_grad


def test_tensor_subclass_is_unsupported():
    class Sub(torch.Tensor):
        pass

    with pytest.raises(Unsupported) as error:
        wrap(tracer(), torch.ones(2).as_subclass(Sub), X)
    assert error.value.key == "tensor_subclass"


def test_int_is_a_symbolic_int_with_a_type_guard():
    tx = tracer()
    vt = wrap(tx, 7, X)
    assert isinstance(vt, SymIntVariable) and str(vt.expr) == "s0" and vt.hint() == 7
    assert [(type(g), g.type) for g in guards(tx)] == [(TypeGuard, int)]
    assert vt.input_sources == frozenset({X})


@pytest.mark.parametrize("value", [0, 1, True, False])
def test_zero_one_and_bools_are_constants_guarded_by_value(value):
    tx = tracer()
    vt = wrap(tx, value, X)
    assert isinstance(vt, ConstantVariable) and vt.value is value
    (guard,) = guards(tx)
    assert isinstance(guard, EqualsGuard) and guard.value is value


def test_int_under_dynamic_false_is_a_constant():
    tx = tracer(TracePlan(False, "value", frozenset()))
    vt = wrap(tx, 7, X)
    assert isinstance(vt, ConstantVariable)
    assert [type(g) for g in guards(tx)] == [EqualsGuard]


def test_float_and_string_are_constants_guarded_by_value():
    tx = tracer()
    assert wrap(tx, 0.5, X).as_python_constant() == 0.5
    assert wrap(tx, "relu", LocalSource("act")).as_python_constant() == "relu"
    assert [(g.source, g.value) for g in guards(tx)] == [(X, 0.5), (LocalSource("act"), "relu")]


def test_torch_size_is_a_tuple_of_sizes_guarded_by_type_and_length():
    tx = tracer()
    vt = wrap(tx, torch.Size([1, 3]), X)
    assert isinstance(vt, SizeVariable) and vt.python_type() is torch.Size
    one, three = vt.items
    for item in (one, three):   # a size of 1 is a symbol as a tensor's dim of 1 is
        assert isinstance(item, SymIntVariable) and not item.is_python_constant()
    assert [type(g).__name__ for g in guards(tx)] == ["LenGuard", "TypeGuard", "TypeGuard"]
    assert guards(tx)[0].type is torch.Size and guards(tx)[0].length == 2


def test_module_is_guarded_by_its_class_not_its_identity():
    tx = tracer()
    m = torch.nn.ReLU()
    vt = wrap(tx, m, X)
    assert isinstance(vt, NNModuleVariable) and vt.value is m
    kind, = guards(tx)   # what the trace reads of it is guarded as it reads it (identical layers share entries)
    assert isinstance(kind, TypeGuard) and kind.type is torch.nn.ReLU


def test_list_gets_a_len_guard_and_items_through_item_sources():
    tx = tracer()
    vt = wrap(tx, [torch.ones(2), 2.5], X)
    assert isinstance(vt, ListVariable)
    first = guards(tx)[0]
    assert isinstance(first, LenGuard) and (first.type, first.length) == (list, 2)
    assert vt.items[0].source == ItemSource(X, 0) and vt.items[1].source == ItemSource(X, 1)
    assert [type(g) for g in guards(tx)[1:]] == [TensorGuard, EqualsGuard]


def test_tuple_gets_a_len_guard():
    tx = tracer()
    vt = wrap(tx, (2.5, "a"), X)
    assert isinstance(vt, TupleVariable) and vt.as_python_constant() == (2.5, "a")
    assert (guards(tx)[0].type, guards(tx)[0].length) == (tuple, 2)


def test_dict_gets_a_dict_keys_guard_in_order():
    tx = tracer()
    vt = wrap(tx, {"b": 1.5, "a": 2.5}, X)
    assert isinstance(vt, DictVariable) and list(vt.items) == ["b", "a"]
    guard = guards(tx)[0]
    assert isinstance(guard, DictKeysGuard) and guard.keys == ("b", "a") and guard.type is dict
    assert vt.items["a"].source == ItemSource(X, "a")


def test_ordered_dict_keeps_its_type():
    tx = tracer()
    vt = wrap(tx, collections.OrderedDict(a=1.5), X)
    assert vt.python_type() is collections.OrderedDict
    assert guards(tx)[0].type is collections.OrderedDict


def test_dict_with_a_key_compared_by_value_is_unsupported():
    """A key with its own `==` (a frozen dataclass, a tensor) is neither a constant nor pinned by identity."""
    with pytest.raises(Unsupported) as error:
        wrap(tracer(), {ValueKey(1): 1}, X)
    assert error.value.key == "dict_keys"
    with pytest.raises(Unsupported):
        wrap(tracer(), {torch.ones(1): 1}, X)


def test_dict_keyed_by_classes_and_identity_objects_is_guarded_by_its_keys():
    tx, marker = tracer(), object()
    vt = wrap(tx, {int: 1.5, marker: 2.5}, X)
    assert isinstance(vt, DictVariable) and list(vt.items) == [int, marker]
    (guard,) = [g for g in tx.ctx.guards if isinstance(g, DictKeysGuard)]
    assert guard.keys == (int, marker)


def test_same_list_under_two_names_is_one_tracker_and_an_alias_guard():
    tx = tracer()
    shared = [1.5]
    a = wrap(tx, shared, LocalSource("a"))
    b = wrap(tx, shared, LocalSource("b"))
    assert a is b
    (alias,) = [g for g in guards(tx) if isinstance(g, AliasGuard)]
    assert (alias.source, alias.other, alias.same) == (LocalSource("b"), LocalSource("a"), True)


def test_two_distinct_lists_are_guarded_as_not_the_same_once_one_is_changed():
    tx = tracer()
    a, b, c = [1.5], [1.5], {"k": 1.5}  # alive together, as in a frame
    va = wrap(tx, a, LocalSource("a"))
    wrap(tx, b, LocalSource("b"))
    wrap(tx, c, LocalSource("c"))
    assert not [g for g in guards(tx) if isinstance(g, AliasGuard)]  # unchanged: either way reads alike
    tx.ctx.side_effects.mutated(va)
    (distinct,) = tx.ctx.distinct_object_guards()  # not against the dict: a type guard tells them apart
    assert (distinct.source, distinct.others) == (LocalSource("a"), (LocalSource("b"),))


def test_same_source_wrapped_twice_is_one_tracker_with_one_set_of_guards():
    tx = tracer()
    t = torch.ones(2)
    assert wrap(tx, t, X) is wrap(tx, t, X)
    assert len(guards(tx)) == 1


def test_function_class_and_builtin_are_guarded_by_identity():
    tx = tracer()
    fn = wrap(tx, noop, LocalSource("f"))
    cls = wrap(tx, torch.nn.Linear, LocalSource("c"))
    builtin = wrap(tx, math.sqrt, LocalSource("b"))
    assert isinstance(fn, UserFunctionVariable) and fn.source == LocalSource("f")
    assert isinstance(cls, ClassVariable) and isinstance(builtin, BuiltinVariable)
    assert [type(g) for g in guards(tx)] == [IdGuard, IdGuard, IdGuard]


def test_bound_method_wraps_its_function_and_self_through_their_sources():
    tx = tracer()
    obj = Config_()
    vt = wrap(tx, obj.scaled, X)
    assert isinstance(vt, UserMethodVariable)
    assert vt.fn.source == AttrSource(X, "__func__") and vt.obj.source == AttrSource(X, "__self__")
    assert [type(g) for g in guards(tx)] == [IdGuard, TypeGuard]


def test_partial_is_guarded_by_type_and_its_parts_by_their_sources():
    tx = tracer()
    vt = wrap(tx, functools.partial(noop, 2.5), X)
    assert isinstance(vt, PartialVariable)
    assert isinstance(guards(tx)[0], TypeGuard) and guards(tx)[0].type is functools.partial
    assert vt.args[0].as_python_constant() == 2.5


@pytest.mark.parametrize("value", [torch.finfo(torch.float32), torch.iinfo(torch.int32)])
def test_finfo_inputs_are_unsupported(value):
    with pytest.raises(Unsupported) as error:
        wrap(tracer(), value, X)
    assert error.value.key == "input_type"


def test_a_code_input_is_a_constant_pinned_by_identity():
    tx = tracer()
    vt = wrap(tx, noop.__code__, X)
    assert vt.as_python_constant() is noop.__code__
    assert isinstance(guards(tx)[0], IdGuard)


def test_named_tuple_of_constants_is_a_constant_guarded_by_value():
    Point = collections.namedtuple("Point", "a b")
    tx = tracer()
    assert wrap(tx, Point(1, 2), X).as_python_constant() == Point(1, 2)
    (guard,) = guards(tx)
    assert isinstance(guard, EqualsGuard) and type(guard.value) is Point


def test_named_tuple_holding_a_tensor_is_read_item_by_item():
    Point = collections.namedtuple("Point", "a b")
    tx = tracer()
    vt = wrap(tx, Point(torch.ones(1), 2), X)
    assert vt.python_type() is Point and len(vt.items) == 2
    assert any(isinstance(g, LenGuard) and g.type is Point for g in guards(tx))


def test_other_object_is_a_user_object_guarded_by_type():
    tx = tracer()
    vt = wrap(tx, Config_(), X)
    assert isinstance(vt, UserObjectVariable)
    (guard,) = guards(tx)
    assert isinstance(guard, TypeGuard) and guard.type is Config_


def test_wrap_constant_result_picks_the_tracker_for_each_kind():
    assert isinstance(wrap_constant_result(3), ConstantVariable)
    assert isinstance(wrap_constant_result(torch.Size([2])), SizeVariable)
    assert isinstance(wrap_constant_result((1, [2])), TupleVariable)
    assert isinstance(wrap_constant_result({1: 2}), DictVariable)
    assert isinstance(wrap_constant_result({1}), SetVariable)
    assert isinstance(wrap_constant_result(frozenset({1})), ConstantVariable)
    assert isinstance(wrap_constant_result(math), PythonModuleVariable)
    assert isinstance(wrap_constant_result(torch.Tensor.add), TensorUnboundMethodVariable)
    assert isinstance(wrap_constant_result(torch.relu), TorchFunctionVariable)
    assert isinstance(wrap_constant_result(noop), UserFunctionVariable)
    assert isinstance(wrap_constant_result(len), BuiltinVariable)
    assert isinstance(wrap_constant_result(int), ClassVariable)
    assert isinstance(wrap_constant_result(torch.finfo(torch.float16)), ObjectConstantVariable)


def test_wrap_constant_result_of_a_tensor_is_unsupported():
    with pytest.raises(Unsupported) as error:
        wrap_constant_result(torch.ones(1))
    assert error.value.key == "sourceless"

"""ConstantVariable and ObjectConstantVariable: values fixed at trace time, folded, guarded by
value when read from the frame (pdyn/variables/values/constant.py)."""

import math

import pytest
import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.frame_codegen import FrameCodegen
from pdyn.guards.guards import EqualsGuard
from pdyn.sources import LocalSource
from pdyn.trace.variables.values.constant import ConstantVariable, ObjectConstantVariable, is_constant_value
from pdyn.trace.variables.builtins import BuiltinVariable
from tests.tracing import assert_graph, guards_of, trace


def noop(x):
    return x


@pytest.mark.parametrize("value", [None, True, 2.5, "s", b"b", ..., range(3), slice(1, None), torch.float16,
                                   torch.device("cpu"), (1, "a"), frozenset({1}), 3 + 1j])
def test_is_constant_value_accepts_immutable_values(value):
    assert is_constant_value(value)


@pytest.mark.parametrize("value", [[1], {"a": 1}, {1}, (1, [2]), slice(0, [1]), torch.ones(1), object()])
def test_is_constant_value_rejects_mutable_or_opaque_values(value):
    assert not is_constant_value(value)


def test_constant_knows_its_value_and_type():
    vt = ConstantVariable(2.5)
    assert vt.is_python_constant() and vt.as_python_constant() == 2.5 and vt.python_type() is float
    assert repr(vt) == "ConstantVariable(2.5)"


def test_float_argument_is_a_constant_guarded_by_value():
    def f(x, eps):
        return x + eps

    tx = trace(f, torch.ones(2), 1e-5)
    assert isinstance(tx.locals["eps"], ConstantVariable)
    assert [(g.source, g.value) for g in guards_of(tx, EqualsGuard)] == [(LocalSource("eps"), 1e-5)]
    assert_graph(tx, """
        x = placeholder L['x']
        add = operator.add(x, 1e-05)
    """)


def test_method_of_a_constant_is_folded():
    def f(mode):
        return mode.upper(), mode.startswith("tr")

    tx = trace(f, "train")
    assert isinstance(tx.locals["mode"].getattr(tx, "upper"), BuiltinVariable)
    assert tx.result.as_python_constant() == ("TRAIN", True)


def test_missing_attribute_of_a_constant_raises_attribute_error():
    tx = trace(noop, 1.5)
    with pytest.raises(UserException) as error:
        ConstantVariable("s").getattr(tx, "nope")
    assert isinstance(error.value.exc, AttributeError)


def test_attribute_of_a_dtype_is_a_constant():
    def f(x):
        return x.dtype.is_floating_point, x.dtype.itemsize

    tx = trace(f, torch.ones(1, dtype=torch.float16))
    assert tx.result.as_python_constant() == (True, 2)


def test_iterate_over_a_range_and_a_string():
    tx = trace(noop, 1.5)
    assert [v.as_python_constant() for v in ConstantVariable(range(2, 5)).iterate(tx)] == [2, 3, 4]
    assert [v.as_python_constant() for v in ConstantVariable("ab").iterate(tx)] == ["a", "b"]


def test_iterate_over_a_number_is_unsupported():
    tx = trace(noop, 1.5)
    with pytest.raises(Unsupported) as error:
        ConstantVariable(3.5).iterate(tx)
    assert error.value.key == "iterate"


def test_reconstruct_writes_a_literal_or_a_named_constant():
    codegen = FrameCodegen()
    assert ConstantVariable(3).reconstruct(codegen) == "3"
    assert ConstantVariable("a'b").reconstruct(codegen) == repr("a'b")
    name = ConstantVariable(torch.float32).reconstruct(codegen)
    assert codegen.scope[name] is torch.float32
    nan = ConstantVariable(math.nan).reconstruct(codegen)
    assert math.isnan(codegen.scope[nan])


def test_object_constant_folds_attribute_reads():
    tx = trace(noop, 1.5)
    info = ObjectConstantVariable(torch.finfo(torch.float16))
    assert info.is_python_constant() and info.getattr(tx, "max").as_python_constant() == 65504.0
    with pytest.raises(UserException) as error:
        info.getattr(tx, "nope")
    assert isinstance(error.value.exc, AttributeError)


def test_finfo_is_folded_in_a_trace():
    def f(x):
        return x.clamp(max=torch.finfo(x.dtype).max)

    tx = trace(f, torch.ones(1, dtype=torch.float16))
    assert_graph(tx, """
        x = placeholder L['x']
        clamp = x.clamp(max=65504.0)
    """)

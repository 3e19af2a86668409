"""VariableTracker's defaults: every unknown operation is Unsupported with a stable key, never a
wrong answer (pdyn/variables/base.py)."""

import operator

import pytest
import torch

from pdyn.base.errors import Unsupported
from pdyn.trace.frame_codegen import FrameCodegen
from pdyn.sources import AttrSource, LocalSource
from pdyn.trace.variables.base import NULL, VariableTracker
from tests.tracing import trace


class Bare(VariableTracker):
    """A tracker that overrides nothing."""


class Named(VariableTracker):
    def __init__(self, value):
        self.value = value

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.value


def noop(x):
    return x


@pytest.mark.parametrize("operation, key", [
    (lambda vt, tx: vt.python_type(), "python_type"),
    (lambda vt, tx: vt.as_python_constant(), "not_constant"),
    (lambda vt, tx: vt.binary_op(tx, operator.add, vt), "binary_op"),
    (lambda vt, tx: vt.unary_op(tx, operator.neg), "unary_op"),
    (lambda vt, tx: vt.getattr(tx, "foo"), "getattr"),
    (lambda vt, tx: vt.call(tx, [], {}), "call"),
    (lambda vt, tx: vt.call_method(tx, "foo", [], {}), "getattr"),
    (lambda vt, tx: vt.iterate(tx), "iterate"),
    (lambda vt, tx: vt.truth(tx), "truth"),
    (lambda vt, tx: vt.reconstruct(FrameCodegen()), "reconstruct"),
])
def test_default_operation_is_unsupported_with_its_key(operation, key):
    tx = trace(noop, 1.5)
    with pytest.raises(Unsupported) as error:
        operation(Bare(), tx)
    assert error.value.key == key


def test_default_messages_name_the_operation_and_the_type():
    tx = trace(noop, 1.5)
    with pytest.raises(Unsupported, match="`add` on Bare and Bare"):
        Bare().binary_op(tx, operator.add, Bare())
    with pytest.raises(Unsupported, match="attribute 'foo' of Bare"):
        Bare().getattr(tx, "foo")


def test_a_tracker_is_not_a_constant_by_default():
    assert Bare().is_python_constant() is False


def test_truth_of_a_constant_tracker_is_pythons_truth():
    tx = trace(noop, 1.5)
    assert Named([]).truth(tx) is False and Named("a").truth(tx) is True


def test_reconstruct_reads_the_value_again_through_its_source():
    vt = Bare()
    vt.source = AttrSource(LocalSource("self"), "w")
    assert vt.reconstruct(FrameCodegen()) == "L['self'].w"


def test_repr_names_the_type_and_the_source():
    vt = Bare()
    assert repr(vt) == "Bare"
    vt.source = LocalSource("x")
    assert repr(vt) == f"Bare from {LocalSource('x')}"
    assert repr(NULL) == "NULL"


def test_default_operation_during_a_trace_is_unsupported_at_the_users_line():
    def f(x):
        for v in len:
            x = x + v
        return x

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "iterate"
    assert error.value.loc is not None and error.value.loc.lineno == f.__code__.co_firstlineno + 1

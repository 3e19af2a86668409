"""Opcodes that read and write names: fast locals, cells, globals, constants, attributes
(pdyn/handlers/locals.py)."""

import types

import pytest
import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import GlobalNameGuard, IdGuard, TypeGuard
from pdyn.sources import AttrSource, GlobalSource, LocalSource
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.tensor import TensorVariable
from tests.tracing import assert_graph, assert_ran, guards_of, trace

SCALE = torch.full((3,), 2.0)
counter = 0


class Box:
    def __init__(self, t):
        self.t = t


def test_load_and_store_fast_rebind_a_local():
    def f(x):
        y = x * 2
        y = y + x
        return y

    tx = trace(f, torch.ones(3))
    assert_ran(tx, f, "LOAD_FAST", "STORE_FAST")
    assert tx.locals["y"] is tx.result
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 2)
        add = operator.add(mul, x)
    """)


def test_load_const_pushes_a_constant_that_is_folded():
    def f(x):
        return x * (2 + 3), "tag"

    tx = trace(f, torch.ones(3))
    assert_ran(tx, f, "LOAD_CONST")
    assert tx.result.items[1].as_python_constant() == "tag"
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 5)
    """)


def test_load_fast_after_delete_fast_raises_unbound_local_error():
    def f(x):
        y = x
        del y
        return y

    with pytest.raises(UserException) as error:
        trace(f, torch.ones(1))
    assert isinstance(error.value.exc, UnboundLocalError) and "'y'" in str(error.value.exc)


def test_load_global_tensor_is_a_graph_input_read_from_globals():
    def f(x):
        return x * SCALE

    tx = trace(f, torch.ones(3))
    assert_ran(tx, f, "LOAD_GLOBAL")
    assert_graph(tx, """
        x = placeholder L['x']
        g_scale = placeholder G['SCALE']
        mul = operator.mul(x, g_scale)
    """)


def test_load_global_builtin_guards_that_no_global_shadows_it():
    def f(x):
        return len(x)

    tx = trace(f, [1, 2])
    assert tx.result.as_python_constant() == 2
    assert [g.name for g in guards_of(tx, GlobalNameGuard)] == ["len"]


def test_load_global_of_an_unknown_name_raises_name_error():
    def f(x):
        return x + not_defined_anywhere  # noqa: F821

    with pytest.raises(UserException) as error:
        trace(f, torch.ones(1))
    assert isinstance(error.value.exc, NameError)
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_store_global_is_a_side_effect_that_later_loads_see():
    def f(x):
        global counter
        counter = 5
        return x + counter

    tx = trace(f, torch.ones(2))
    assert_ran(tx, f, "STORE_GLOBAL")
    assert tx.ctx.side_effects.globals["counter"].as_python_constant() == 5
    assert counter == 0  # nothing ran for real
    assert_graph(tx, """
        x = placeholder L['x']
        add = operator.add(x, 5)
    """)


def test_cells_of_an_inlined_closure_hold_the_stored_value():
    def f(x):
        y = x + 1

        def g():
            return y * 2

        return g()

    tx = trace(f, torch.ones(2))
    assert_ran(tx, f, "STORE_DEREF", "LOAD_CLOSURE", "MAKE_FUNCTION")
    assert "LOAD_DEREF" in tx.executed_opnames  # in g
    assert_graph(tx, """
        x = placeholder L['x']
        add = operator.add(x, 1)
        mul = operator.mul(add, 2)
    """)


def test_store_deref_to_a_cell_made_in_the_trace_is_allowed():
    def f(x):
        y = x

        def bump():
            nonlocal y
            y = y + 1

        bump()
        return y

    tx = trace(f, torch.ones(2))
    assert isinstance(tx.result, TensorVariable) and tx.result.node.name == "add"


def test_store_deref_to_the_enclosing_scope_of_the_frame_is_replayed_through_the_real_cell():
    y = torch.ones(2)

    def f(x):
        nonlocal y
        y = x
        return y

    tx = trace(f, torch.ones(2))
    effects = tx.output.ctx.side_effects
    assert [kind for kind, _ in effects.order] == ["cell"]
    cell, stored = next(iter(effects.cells.values()))
    assert cell is tx.cells["y"] and stored is tx.locals["x"] and tx.result is stored  # the read sees the store
    assert cell.source.code(repr) == "L['pdyn closure'][0]"


def test_load_deref_of_a_frame_free_variable_reads_it_through_its_source():
    k = torch.ones(2)

    def f(x):
        return x + k

    tx = trace(f, torch.ones(2))
    assert_ran(tx, f, "LOAD_DEREF")
    assert_graph(tx, """
        x = placeholder L['x']
        k = placeholder L['k']
        add = operator.add(x, k)
    """)


def test_load_attr_of_an_object_reads_through_an_attr_source():
    def f(b):
        return b.t + 1

    tx = trace(f, Box(torch.ones(2)))
    assert_ran(tx, f, "LOAD_ATTR")
    assert [g.source for g in guards_of(tx, TypeGuard)] == [LocalSource("b")]
    (placeholder,) = [n for n in tx.output.graph.nodes if n.op == "placeholder"]
    assert placeholder.meta["source"] == AttrSource(LocalSource("b"), "t")


def test_load_method_calls_a_tensor_method():
    def f(x):
        return x.clamp(min=0)

    tx = trace(f, torch.ones(2))
    assert_ran(tx, f, "LOAD_METHOD", "CALL")
    assert_graph(tx, """
        x = placeholder L['x']
        clamp = x.clamp(min=0)
    """)


def test_load_attr_of_a_module_global_guards_the_module():
    def f(x):
        return x * torch.pi

    tx = trace(f, torch.ones(2))
    assert [g.source for g in guards_of(tx, IdGuard)] == [GlobalSource("torch")]
    assert_graph(tx, f"""
        x = placeholder L['x']
        mul = operator.mul(x, {torch.pi!r})
    """)


def test_store_attr_on_an_object_is_a_side_effect_that_later_loads_see():
    def f(b, x):
        b.t = x * 3
        return b.t

    box = Box(None)
    tx = trace(f, box, torch.ones(2))
    assert_ran(tx, f, "STORE_ATTR")
    assert box.t is None
    ((obj, value),) = tx.ctx.side_effects.attrs.values()
    assert obj.source == LocalSource("b") and value is tx.result


def test_store_attr_on_a_tensor_is_unsupported_with_the_attribute_name():
    def f(x):
        x.note = 1
        return x

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(2))
    assert error.value.key == "store_attr" and "'note'" in error.value.message
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_int_argument_is_loaded_as_a_symbolic_int():
    def f(n):
        m = n
        return m

    tx = trace(f, 7)
    assert isinstance(tx.result, SymIntVariable) and str(tx.result.expr) == "s0"
    assert isinstance(trace(f, 1).result, ConstantVariable)


def test_function_defined_in_the_trace_is_a_user_function():
    def f(x):
        g = lambda v: v - 1  # noqa: E731
        return g(x)

    tx = trace(f, torch.ones(2))
    assert isinstance(tx.locals["g"].code, types.CodeType)
    assert_graph(tx, """
        x = placeholder L['x']
        sub = operator.sub(x, 1)
    """)

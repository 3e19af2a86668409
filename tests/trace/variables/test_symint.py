"""SymIntVariable: ints computed from sizes and int inputs stay symbolic; a bool read guards the
expression, a value read specializes it (pdyn/variables/values/symint.py)."""

import math
import operator

import pytest
import sympy
import torch

from pdyn.base.errors import UserException
from pdyn.trace.frame_codegen import FrameCodegen
from pdyn.shapes.sym_float import Sqrt, TrueDiv
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import is_known, python_value
from pdyn.trace.variables.values.symint import SymIntVariable, is_boolean, sym_binary
from tests.tracing import assert_graph, trace


def ident(n):
    return n


def test_arithmetic_stays_symbolic_with_sympy_expressions():
    def f(n):
        return n * 2, n // 3, n % 4, n - 1, n / 2

    tx = trace(f, 10)
    assert [str(v.expr) for v in tx.result.items] == ["2*s0", "FloorDiv(s0, 3)", "Mod(s0, 4)", "s0 - 1", "TrueDiv(s0, 2)"]
    assert [v.hint() for v in tx.result.items] == [20, 3, 2, 9, 5]
    assert tx.ctx.shape_env.specialized == {} and tx.ctx.shape_env.guards == []


def test_graph_nodes_are_made_on_first_use_only():
    def f(x, n):
        a = n * 2
        b = n + 100  # never used by the graph
        return x.view(a, -1), b

    tx = trace(f, torch.ones(6, 2), 3)
    assert_graph(tx, """
        x = placeholder L['x']
        n = placeholder L['n']
        mul = operator.mul(n, 2)
        view = x.view(mul, -1)
    """)


def test_min_and_sqrt_give_sympy_expressions_and_graph_nodes():
    def f(x, n):
        return x * min(n, 4), x * math.sqrt(n)

    tx = trace(f, torch.ones(2), 9)
    assert tx.ctx.shape_env.specialized == {}
    assert_graph(tx, """
        x = placeholder L['x']
        n = placeholder L['n']
        min_1 = min(n, 4)
        mul = operator.mul(x, min_1)
        sqrt = math.sqrt(n)
        mul_2 = operator.mul(x, sqrt)
    """)


def test_min_and_sqrt_expressions():
    def f(n):
        return min(n, 4), math.sqrt(n), math.ceil(n / 4), abs(-n)

    tx = trace(f, 9)
    exprs = [v.expr for v in tx.result.items]
    s0 = sympy.Symbol("s0", integer=True)
    # float-valued steps are opaque Python float ops, so they round as Python rounds
    assert exprs == [sympy.Min(s0, 4), Sqrt(s0), sympy.ceiling(TrueDiv(s0, 4)), sympy.Abs(s0)]
    hints = [v.hint() for v in tx.result.items]
    assert hints == [4, 3.0, 3, 9] and [type(h) for h in hints] == [int, float, int, int]


def test_inplace_operator_on_an_int_is_the_plain_operator():
    def f(x, n):
        n *= 2
        return x.view(n, -1)

    tx = trace(f, torch.ones(8), 4)
    targets = [node.target for node in tx.output.graph.nodes if node.op == "call_function"]
    assert targets == [operator.mul]


def test_bool_read_records_a_guard_and_keeps_the_symbol():
    def f(x, n):
        if n > 4:
            return x * 2
        return x

    tx = trace(f, torch.ones(1), 7)
    env = tx.ctx.shape_env
    assert [str(g.expr) for g in env.guards] == ["s1 > 4"]   # s0: x's size, 1 (a symbol too)
    assert env.specialized == {}
    assert env.guards[0].loc.lineno == f.__code__.co_firstlineno + 1


def test_truth_of_a_plain_int_compares_it_with_zero():
    def f(n):
        return "yes" if n else "no"

    tx = trace(f, -3)
    assert tx.result.as_python_constant() == "yes"
    assert tx.ctx.shape_env.guards == []  # the range of a negative symbol (-inf, -1) decides it


def test_value_read_specializes_and_records_why_and_where():
    def f(n):
        return list(range(n))

    tx = trace(f, 3)
    assert tx.result.as_python_constant() == [0, 1, 2]
    ((sym, spec),) = tx.ctx.shape_env.specialized.items()
    # a loop count: pinned by an equality that held, not a value read (never a break)
    assert str(sym) == "s0" and spec.value == 3 and not spec.by_value_read and spec.why == "range()"
    assert spec.loc.lineno == f.__code__.co_firstlineno + 1


def test_pinned_symbol_makes_expressions_constants():
    tx = trace(ident, 6)
    n = tx.result
    doubled = sym_binary(tx, operator.mul, n, ConstantVariable(2))
    assert not doubled.is_python_constant()
    n.value_read("a test")
    assert doubled.is_python_constant() and doubled.as_python_constant() == 12 and doubled.node == 12


def test_division_by_a_zero_hint_raises_zero_division_error():
    def f(n, k):
        return n // (k - 7)

    with pytest.raises(UserException) as error:
        trace(f, 5, 7)
    assert isinstance(error.value.exc, ZeroDivisionError)


def test_python_type_of_symbolic_values():
    def f(n):
        return n * 2, n / 2, n > 3

    tx = trace(f, 5)
    assert [v.python_type() for v in tx.result.items] == [int, float, bool]
    assert is_boolean(tx.result.items[2].expr) and not is_boolean(tx.result.items[0].expr)


def test_operation_without_a_sympy_rule_is_a_value_read():
    def f(n):
        return ~n, n & 3

    tx = trace(f, 5)
    assert [v.as_python_constant() for v in tx.result.items] == [-6, 1]
    assert len(tx.ctx.shape_env.specialized) == 1


def test_operation_with_a_non_number_is_a_value_read():
    def f(n):
        return n * "ab"

    tx = trace(f, 2)
    assert tx.result.as_python_constant() == "abab"
    assert len(tx.ctx.shape_env.specialized) == 1


def test_reconstruct_computes_an_int_from_the_sizes_it_is_made_of():
    tx = trace(ident, 9)
    assert tx.result.reconstruct(FrameCodegen()) == "((L['n']))"
    assert not tx.ctx.shape_env.specialized  # no value read: the next call's n is read again


def test_reconstruct_of_a_float_size_is_a_value_read():
    tx = trace(lambda n: n / 2, 9)
    assert tx.result.reconstruct(FrameCodegen()) == "4.5"
    assert [spec.why for spec in tx.ctx.shape_env.specialized.values()] == ["returned to Python"]


def test_is_known_and_python_value():
    tx = trace(ident, 9)
    assert is_known(tx.result) and is_known(ConstantVariable(1))
    assert python_value(tx.result, "a test") == 9
    assert repr(tx.result) == "SymIntVariable(s0: int)"


def test_input_sources_follow_the_arithmetic():
    def f(x, n):
        return x.size(0) * n

    tx = trace(f, torch.ones(4), 3)
    assert {s.expr() for s in tx.result.input_sources} == {"L['x']", "L['n']"}
    assert isinstance(tx.result, SymIntVariable)


def test_mod_of_an_expression_that_folded_to_a_number_can_feed_min():
    def f(n):
        return min((n - n) % 3, 4)

    tx = trace(f, 5)
    assert tx.result.as_python_constant() == 0

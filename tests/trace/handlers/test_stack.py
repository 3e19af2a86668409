"""Stack shuffling opcodes: POP_TOP, PUSH_NULL, COPY, SWAP, END_FOR (pdyn/handlers/stack.py)."""

import sys

import pytest
import torch

from pdyn.base.errors import Unsupported
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.tensor import TensorVariable
from tests.tracing import assert_graph, assert_ran, trace


def test_pop_top_drops_an_expression_statements_value():
    def f(x):
        x + 1
        return x

    tx = trace(f, torch.ones(3))
    assert_ran(tx, f, "POP_TOP")
    assert tx.result.node.op == "placeholder"  # the value returned is x, not x + 1
    assert_graph(tx, """
        x = placeholder L['x']
        add = operator.add(x, 1)
    """)


def test_push_null_goes_below_a_callable_read_from_a_local():
    def f(x):
        g = torch.relu
        return g(x)

    tx = trace(f, torch.ones(3))
    assert_ran(tx, f, "PUSH_NULL", "CALL")
    assert_graph(tx, """
        x = placeholder L['x']
        relu = torch.relu(x)
    """)
    assert tx.stack == []


def test_copy_and_swap_run_a_chained_comparison_on_sizes():
    def f(x):
        return 3 < x.size(0) < 10

    tx = trace(f, torch.ones(5))
    assert_ran(tx, f, "COPY", "SWAP", "JUMP_IF_FALSE_OR_POP" if sys.version_info < (3, 12) else "POP_JUMP_IF_FALSE")
    # the first comparison is a bool read (a guard); the second is the value returned, still symbolic
    assert [str(g.expr) for g in tx.ctx.shape_env.guards] == ["3 < s0"]
    assert isinstance(tx.result, SymIntVariable) and str(tx.result.expr) == "s0 < 10"


def test_copy_and_swap_run_an_augmented_item_assignment():
    def f(xs):
        xs[0] += 1
        return xs[0]

    tx = trace(f, [torch.ones(2), torch.zeros(2)])
    assert_ran(tx, f, "COPY", "SWAP", "STORE_SUBSCR")
    assert isinstance(tx.result, TensorVariable)
    assert_graph(tx, """
        xs_0 = placeholder L['xs'][0]
        xs_1 = placeholder L['xs'][1]
        iadd = operator.iadd(xs_0, 1)
    """)


def test_swap_keeps_operands_in_order_when_the_chain_fails():
    def f(n):
        return 8 < n < 100

    tx = trace(f, 7)
    assert tx.result.as_python_constant() is False
    assert [str(g.expr) for g in tx.ctx.shape_env.guards] == ["8 >= s0"]


def test_chained_comparison_of_tensors_is_a_data_dependent_branch_at_the_users_line():
    def f(x, y, z):
        return x < y < z

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(2), torch.ones(2), torch.ones(2))
    assert error.value.key == "data_dependent_branch"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1
    assert error.value.loc.filename == __file__


@pytest.mark.skipif(sys.version_info < (3, 12), reason="END_FOR exists from Python 3.12")
def test_end_for_pops_the_iterator_and_the_last_item():
    def f(xs):
        total = 0
        for v in xs:
            total = total + v
        return total

    tx = trace(f, [torch.ones(2), torch.ones(2)])
    assert tx.stack == []
    assert_graph(tx, """
        xs_0 = placeholder L['xs'][0]
        xs_1 = placeholder L['xs'][1]
        add = operator.add(0, xs_0)
        add_2 = operator.add(add, xs_1)
    """)

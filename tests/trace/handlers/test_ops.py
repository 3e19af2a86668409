"""Arithmetic, comparison, identity, membership, unary and subscript opcodes (pdyn/handlers/ops.py)."""

import pytest
import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.values.symint import SymIntVariable
from tests.tracing import assert_graph, assert_ran, trace


class Box:
    pass


def test_binary_op_adds_tensor_and_constant():
    def f(x):
        return x + 1

    tx = trace(f, torch.randn(3))
    assert_ran(tx, f, "BINARY_OP")
    assert_graph(tx, """
        x = placeholder L['x']
        add = operator.add(x, 1)
    """)


def test_binary_op_on_constants_is_folded_without_a_node():
    def f(x):
        k = 3
        return x * (k ** 2 - 1)

    tx = trace(f, torch.randn(3))
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 8)
    """)


def test_inplace_binary_op_on_a_tensor_records_the_inplace_operator():
    def f(x):
        y = x * 1
        y += 2
        return y

    tx = trace(f, torch.randn(3))
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 1)
        iadd = operator.iadd(mul, 2)
    """)
    assert tx.result.node.name == "mul"  # `y += 2` returns y itself, as eager does


def test_binary_op_on_a_symbolic_int_stays_symbolic():
    def f(n):
        return n * 2 + 1

    tx = trace(f, 5)
    assert isinstance(tx.result, SymIntVariable) and str(tx.result.expr) == "2*s0 + 1"
    assert tx.ctx.shape_env.specialized == {}


def test_binary_op_on_constants_that_raises_is_the_users_exception():
    def f(x):
        return x + 1 / 0

    with pytest.raises(UserException) as error:
        trace(f, torch.ones(1))
    assert isinstance(error.value.exc, ZeroDivisionError)


def test_binary_op_of_objects_without_the_dunder_raises_eagers_type_error():
    def f(a, b):
        return a + b

    with pytest.raises(UserException) as error:
        trace(f, Box(), Box())
    assert str(error.value.exc) == "unsupported operand type(s) for +: 'Box' and 'Box'"


def test_binary_op_that_eager_rejects_raises_the_same_type_error():
    def f(x, g):
        return g + x

    with pytest.raises(UserException) as error:
        trace(f, torch.ones(1), len)
    assert isinstance(error.value.exc, TypeError)


def test_compare_op_on_tensors_records_a_node():
    def f(x, y):
        return x < y

    tx = trace(f, torch.ones(2), torch.zeros(2))
    assert_ran(tx, f, "COMPARE_OP")
    assert_graph(tx, """
        x = placeholder L['x']
        y = placeholder L['y']
        lt = operator.lt(x, y)
    """)


def test_compare_op_on_a_size_is_symbolic_until_read():
    def f(x):
        big = x.size(0) >= 4
        if big:
            return x * 2
        return x

    tx = trace(f, torch.ones(6))
    assert [str(g.expr) for g in tx.ctx.shape_env.guards] == ["s0 >= 4"]
    assert tx.result.node.name == "mul"


def test_is_op_on_the_same_tensor_and_on_none():
    def f(x, y):
        return x is x, x is y, y is not None, None is None

    tx = trace(f, torch.ones(1), torch.ones(1))
    assert_ran(tx, f, "IS_OP")
    assert tx.result.as_python_constant() == (True, False, True, True)


def test_is_op_that_cannot_be_decided_is_unsupported():
    def f(x):
        k = 300
        return x.size(0) is k

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(300))
    assert error.value.key == "is"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 2


def test_contains_op_on_constants_and_dict_keys():
    def f(d, k):
        return k in d, "b" not in d, 2 in (1, 2)

    tx = trace(f, {"a": torch.ones(1)}, "a")
    assert_ran(tx, f, "CONTAINS_OP")
    assert tx.result.as_python_constant() == (True, True, True)


def test_contains_op_on_a_tensor_is_data_dependent_at_the_users_line():
    def f(x):
        return 1 in x

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(2))
    assert error.value.key == "data_dependent"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_unary_ops_on_a_tensor_record_nodes():
    def f(x):
        return -x, ~x, +x

    tx = trace(f, torch.ones(2, dtype=torch.int32))
    assert_ran(tx, f, "UNARY_NEGATIVE", "UNARY_INVERT", "UNARY_POSITIVE")
    assert_graph(tx, """
        x = placeholder L['x']
        neg = operator.neg(x)
        invert = operator.invert(x)
        pos = operator.pos(x)
    """)


def test_unary_ops_on_constants_and_sizes():
    def f(x, k):
        return -k, not k, -x.size(0)

    tx = trace(f, torch.ones(3), 1.5)
    assert_ran(tx, f, "UNARY_NEGATIVE", "UNARY_NOT")
    neg_k, not_k, neg_size = tx.result.items
    assert (neg_k.as_python_constant(), not_k.as_python_constant()) == (-1.5, False)
    assert str(neg_size.expr) == "-s0"


def test_unary_not_of_a_tensor_is_a_data_dependent_branch():
    def f(x):
        return not x

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(2))
    assert error.value.key == "data_dependent_branch" and error.value.hint


def test_binary_subscr_indexes_tensors_and_lists():
    def f(x, xs):
        return x[1:, 0] + xs[-1]

    tx = trace(f, torch.ones(3, 2), [torch.ones(2), torch.zeros(2)])
    assert_ran(tx, f, "BINARY_SUBSCR", "BUILD_SLICE")
    assert_graph(tx, """
        x = placeholder L['x']
        xs_0 = placeholder L['xs'][0]
        xs_1 = placeholder L['xs'][1]
        getitem = operator.getitem(x, (slice(1, None, None), 0))
        add = operator.add(getitem, xs_1)
    """)


def test_binary_subscr_out_of_range_raises_index_error():
    def f(xs):
        return xs[5]

    with pytest.raises(UserException) as error:
        trace(f, [1, 2])
    assert isinstance(error.value.exc, IndexError)


def test_binary_subscr_of_an_unindexable_object_raises_eagers_type_error():
    def f(b):
        return b[0]

    with pytest.raises(UserException) as error:
        trace(f, Box())
    assert str(error.value.exc) == "'Box' object is not subscriptable"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_store_subscr_on_a_tensor_records_a_mutating_setitem():
    def f(x):
        x[0] = 5
        return x

    tx = trace(f, torch.zeros(3))
    assert_ran(tx, f, "STORE_SUBSCR")
    assert_graph(tx, """
        x = placeholder L['x']
        setitem = operator.setitem(x, 0, 5)
    """)


def test_store_subscr_on_a_tuple_is_unsupported():
    def f(t):
        t[0] = 1
        return t

    with pytest.raises(Unsupported) as error:
        trace(f, (1, 2))
    assert error.value.key == "setitem"


def test_delete_subscr_removes_a_dict_key_and_marks_it_mutated():
    def f(d):
        del d["a"]
        return len(d)

    tx = trace(f, {"a": 1, "b": 2})
    assert_ran(tx, f, "DELETE_SUBSCR")
    assert tx.result.as_python_constant() == 1
    assert len(tx.ctx.side_effects.containers) == 1


def test_delete_subscr_of_a_missing_key_raises_key_error():
    def f(d):
        del d["zz"]

    with pytest.raises(UserException) as error:
        trace(f, {"a": 1})
    assert isinstance(error.value.exc, KeyError)


def test_delete_subscr_on_a_constant_is_unsupported():
    def f(s):
        del s[0]

    with pytest.raises(Unsupported) as error:
        trace(f, "abc")
    assert error.value.key == "delitem"

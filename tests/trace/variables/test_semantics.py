"""The semantics handlers and builtin rules share: fold, binary dispatch, sequence equality with
sizes, identity and `in` (pdyn/variables/semantics.py, fold in pdyn/variables/base.py)."""

import operator

import pytest
import torch

import pdyn
from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.base import fold
from pdyn.trace.variables.semantics import binary, contains, identity, is_same
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import ListVariable, TupleVariable
from pdyn.trace.variables.containers.sets import SetVariable
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.tensor import TensorVariable
from tests.helpers import check_calls
from tests.tracing import assert_graph, trace


def identity_fn(x):
    return x


TX = trace(lambda: None)  # a finished trace: what fold needs of a translator (wrap_constant)


def tracer_with(*args):
    """A finished trace of `identity_fn(*args)`: its tracker for the argument, and the tracer."""
    tx = trace(identity_fn, *args)
    return tx, tx.locals["x"]


def test_fold_computes_on_constants_and_wraps_the_result():
    assert fold(TX, operator.add, 2, 3).as_python_constant() == 5
    assert isinstance(fold(TX, lambda: (1, 2)), TupleVariable)


def test_fold_turns_an_exception_into_the_users_exception():
    with pytest.raises(UserException) as error:
        fold(TX, operator.truediv, 1, 0)
    assert isinstance(error.value.exc, ZeroDivisionError)


def test_fold_lets_unsupported_through():
    def boom():
        raise Unsupported("x", "no")

    with pytest.raises(Unsupported):
        fold(TX, boom)


def test_binary_with_a_tensor_side_records_a_node():
    tx, x = tracer_with(torch.ones(2))
    out = binary(tx, operator.mul, ConstantVariable(3), x)
    assert isinstance(out, TensorVariable)
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(3, x)
    """)


def test_binary_with_a_symbolic_side_stays_symbolic():
    tx, n = tracer_with(6)
    out = binary(tx, operator.floordiv, n, ConstantVariable(4))
    assert isinstance(out, SymIntVariable) and str(out.expr) == "FloorDiv(s0, 4)"
    assert out.hint() == 1


def test_binary_on_constants_folds():
    tx, _ = tracer_with(torch.ones(1))
    assert binary(tx, operator.sub, ConstantVariable(7), ConstantVariable(2)).as_python_constant() == 5


def test_binary_repeats_a_list_for_int_times_list():
    tx, _ = tracer_with(torch.ones(1))
    out = binary(tx, operator.mul, ConstantVariable(2), ListVariable([ConstantVariable("a")]))
    assert out.as_python_constant() == ["a", "a"]


def test_binary_inplace_add_on_a_list_extends_the_same_list():
    tx, _ = tracer_with(torch.ones(1))
    items = ListVariable([ConstantVariable(1)])
    out = binary(tx, operator.iadd, items, TupleVariable([ConstantVariable(2)]))
    assert out is items and items.as_python_constant() == [1, 2]


def test_shape_compared_with_a_tuple_guards_each_dim_and_pins_on_equality():
    def f(x):
        return x.shape == (4, 6)

    tx = trace(f, torch.ones(4, 6))
    assert tx.result.as_python_constant() is True
    env = tx.ctx.shape_env
    assert sorted(spec.value for spec in env.specialized.values()) == [4, 6]
    assert all(not spec.by_value_read for spec in env.specialized.values())


def test_shape_compared_with_a_different_tuple_stops_at_the_first_unequal_dim():
    def f(x):
        return x.shape != (5, 6)

    tx = trace(f, torch.ones(4, 6))
    assert tx.result.as_python_constant() is True
    env = tx.ctx.shape_env
    assert [str(g.expr) for g in env.guards] == ["Ne(s0, 5)"]
    assert env.specialized == {}


def test_shape_compared_with_a_list_is_unequal_without_a_guard():
    def f(x):
        return x.shape == [4, 6]

    tx = trace(f, torch.ones(4, 6))
    assert tx.result.as_python_constant() is False
    assert tx.ctx.shape_env.guards == [] and tx.ctx.shape_env.specialized == {}


def test_identity_of_constants_tensors_and_objects():
    tx, x = tracer_with(torch.ones(1))
    assert identity(ConstantVariable(None)) == ("const", None)
    assert identity(ConstantVariable(7)) is None  # ints are compared by value where they can be
    assert identity(x) == ("node", x.node)
    items = ListVariable([])
    assert identity(items) == ("vt", id(items))


def test_is_same_for_the_same_tracker_same_node_and_different_types():
    tx, x = tracer_with(torch.ones(1))
    assert is_same(tx, x, x)
    assert not is_same(tx, x, ConstantVariable(None))
    assert not is_same(tx, ConstantVariable(1.5), ConstantVariable("a"))


def test_is_same_on_an_undecidable_pair_is_unsupported():
    tx, n = tracer_with(300)
    with pytest.raises(Unsupported) as error:
        is_same(tx, n, ConstantVariable(300))
    assert error.value.key == "is"


def test_contains_with_a_symbolic_item_compares_item_by_item():
    tx, n = tracer_with(3)
    assert contains(tx, n, TupleVariable([ConstantVariable(1), ConstantVariable(3)]))
    (spec,) = tx.ctx.shape_env.specialized.values()  # n == 3 held: that equality pins n
    assert spec.value == 3


def test_contains_with_a_symbolic_item_in_a_set_is_a_value_read():
    tx, n = tracer_with(3)
    assert contains(tx, n, SetVariable([ConstantVariable(1), ConstantVariable(3)]))
    (spec,) = tx.ctx.shape_env.specialized.values()
    assert spec.value == 3 and spec.why == "an `in` test"


def test_contains_on_a_tensor_is_data_dependent():
    tx, x = tracer_with(torch.ones(2))
    with pytest.raises(Unsupported) as error:
        contains(tx, ConstantVariable(1), x)
    assert error.value.key == "data_dependent"


def test_contains_on_constants_that_raises_is_the_users_type_error():
    tx, _ = tracer_with(torch.ones(1))
    with pytest.raises(UserException) as error:
        contains(tx, ConstantVariable(1), ConstantVariable(5))
    assert isinstance(error.value.exc, TypeError)


def test_mixed_min_max_and_sequence_order_over_sizes_match_eager():
    """`max((n, "a"), (m, "b"))`, `sorted` of tuples of sizes, `x.shape < (3, 4)`, `min(n, 3.0)`:
    Python's order of sequences item by item, each comparison a guarded bool; no break."""
    def f(x, y):
        n = min(x.size(0), 3.0)
        m = max([1.5, x.size(0), y.shape[1]])
        p = max((x.shape[0], "a"), (y.shape[0], "b"))
        q = min(x.shape[0], y.shape[0], key=lambda v: -v)
        r = sorted([(y.shape[1], 1), (3, 0), (x.shape[0], 2)], reverse=True)
        return x * n + m, max(x.shape), p, q, type(n).__name__, r, x.shape < (3, 4), [x.shape[0]] >= [3, 1]

    check_calls(f, *[(torch.randn(n, 4), torch.randn(5, n)) for n in (2, 3, 4, 6, 2)])
    pdyn.reset()
    check_calls(f, (torch.randn(3, 4), torch.randn(5, 3)))
    assert pdyn.stats()["graph_breaks"] == 0 and pdyn.stats()["eager_fallbacks"] == 0

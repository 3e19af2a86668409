"""Building, extending and unpacking tuples, lists, sets, dicts, slices and strings
(pdyn/handlers/containers.py)."""

import pytest
import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.containers.core import DictVariable, ListVariable, TupleVariable
from pdyn.trace.variables.containers.sets import SetVariable
from tests.tracing import assert_graph, assert_ran, trace


def test_build_tuple_and_list_hold_the_trackers():
    def f(x, y):
        return (x, y), [y, x]

    tx = trace(f, torch.ones(1), torch.zeros(1))
    assert_ran(tx, f, "BUILD_TUPLE", "BUILD_LIST")
    t, items = tx.result.items
    assert isinstance(t, TupleVariable) and isinstance(items, ListVariable)
    assert [v.node.name for v in t.items] == ["x", "y"] and [v.node.name for v in items.items] == ["y", "x"]


def test_build_set_deduplicates_constants():
    def f(a):
        return {a, 2, a}

    tx = trace(f, 1)
    assert_ran(tx, f, "BUILD_SET")
    assert isinstance(tx.result, SetVariable) and tx.result.as_python_constant() == {1, 2}


def test_build_map_with_constant_keys():
    def f(x, k):
        return {k: x, "y": 2}

    tx = trace(f, torch.ones(1), "x")
    assert_ran(tx, f, "BUILD_MAP")
    assert isinstance(tx.result, DictVariable) and list(tx.result.items) == ["x", "y"]


def test_build_map_with_a_size_key_specializes_it():
    def f(x):
        return {x.size(0): 1}

    tx = trace(f, torch.ones(5))
    assert list(tx.result.items) == [5]
    assert [spec.why for spec in tx.ctx.shape_env.specialized.values()] == ["a dict key"]


def test_build_map_with_a_tensor_key_is_unsupported_at_the_users_line():
    def f(x):
        return {x: 1}

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "dict_key"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_build_const_key_map_zips_the_key_tuple_with_the_values():
    def f(x):
        return {"a": x, "b": x + 1}

    tx = trace(f, torch.ones(1))
    assert_ran(tx, f, "BUILD_CONST_KEY_MAP")
    assert list(tx.result.items) == ["a", "b"] and tx.result.items["b"].node.name == "add"


def test_build_slice_with_a_size_bound_stays_symbolic_in_a_tensor_index():
    def f(x):
        return x[: x.size(0) // 2]

    tx = trace(f, torch.ones(6))
    assert_ran(tx, f, "BUILD_SLICE")
    assert tx.ctx.shape_env.specialized == {}
    assert_graph(tx, """
        x = placeholder L['x']
        size = x.size(0)
        floordiv = operator.floordiv(size, 2)
        getitem = operator.getitem(x, slice(None, floordiv, None))
    """)


def test_build_slice_with_a_size_bound_on_a_list_is_a_value_read():
    def f(x, xs):
        return xs[: x.size(0)]

    tx = trace(f, torch.ones(2), ["a", "b", "c"])
    assert tx.result.as_python_constant() == ["a", "b"]
    (spec,) = tx.ctx.shape_env.specialized.values()
    assert spec.value == 2 and spec.why == "a slice bound of a Python index"


def test_build_slice_with_a_tensor_bound_is_unsupported():
    def f(x, xs):
        return xs[x:]

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1), [1, 2])
    assert error.value.key == "slice"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_build_string_and_format_value_fold_constants():
    def f(name, k):
        return f"{name}:{k!r:>5}"

    tx = trace(f, "w", 2.5)
    assert_ran(tx, f, "BUILD_STRING", "FORMAT_VALUE")
    assert tx.result.as_python_constant() == "w:  2.5"


def test_format_value_of_a_size_specializes_it():
    def f(x):
        return f"n={x.size(0)}"

    tx = trace(f, torch.ones(4))
    assert tx.result.as_python_constant() == "n=4"
    assert [spec.why for spec in tx.ctx.shape_env.specialized.values()] == ["str() or formatting"]


def test_format_value_of_a_tensor_is_unsupported():
    def f(x):
        return f"{x}"

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "format"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_list_comprehension_appends_to_the_list_being_built():
    def f(xs):
        return [v * 2 for v in xs]

    tx = trace(f, [torch.ones(1), torch.ones(1)])
    assert "LIST_APPEND" in tx.executed_opnames
    assert [v.node.name for v in tx.result.items] == ["mul", "mul_2"]


def test_set_and_dict_comprehensions_add_items():
    def f(ks):
        return {k for k in ks}, {k: k * 2 for k in ks}

    tx = trace(f, ("a", "b"))
    assert {"SET_ADD", "MAP_ADD"} <= tx.executed_opnames
    assert tx.result.as_python_constant() == ({"a", "b"}, {"a": "aa", "b": "bb"})


def test_list_extend_and_set_update_unpack_an_iterable():
    def f(xs):
        return [*xs, 3], {*xs, 3}

    tx = trace(f, (1, 2))
    assert_ran(tx, f, "LIST_EXTEND", "SET_UPDATE")
    assert tx.result.as_python_constant() == ([1, 2, 3], {1, 2, 3})


def test_list_to_tuple_builds_a_starred_tuple():
    def f(xs):
        return (*xs, 3)

    tx = trace(f, [1, 2])
    assert "LIST_TO_TUPLE" in tx.executed_opnames
    assert isinstance(tx.result, TupleVariable) and tx.result.as_python_constant() == (1, 2, 3)


def test_dict_update_merges_a_dict_display():
    def f(d):
        return {**d, "b": 3}

    tx = trace(f, {"a": 1, "b": 2})
    assert_ran(tx, f, "DICT_UPDATE")
    assert tx.result.as_python_constant() == {"a": 1, "b": 3}


def test_dict_update_of_a_non_dict_is_unsupported():
    def f(x):
        return {**x}

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "dict_merge"


def test_dict_merge_of_a_repeated_keyword_raises_type_error():
    def g(**kw):
        return kw

    def f(a, b):
        return g(**a, **b)

    with pytest.raises(UserException) as error:
        trace(f, {"k": 1}, {"k": 2})
    assert isinstance(error.value.exc, TypeError) and "'k'" in str(error.value.exc)


def test_unpack_sequence_pushes_items_in_order():
    def f(pair):
        a, b = pair
        return b - a

    tx = trace(f, (torch.ones(1), torch.zeros(1)))
    assert_ran(tx, f, "UNPACK_SEQUENCE")
    assert_graph(tx, """
        pair_0 = placeholder L['pair'][0]
        pair_1 = placeholder L['pair'][1]
        sub = operator.sub(pair_1, pair_0)
    """)


def test_unpack_sequence_of_the_wrong_length_raises_value_error():
    def f(xs):
        a, b = xs
        return a

    with pytest.raises(UserException) as error:
        trace(f, [1, 2, 3])
    assert isinstance(error.value.exc, ValueError)


def test_unpack_sequence_of_a_tensor_specializes_its_first_dim():
    def f(x):
        a, b = x
        return a + b

    tx = trace(f, torch.ones(2, 3))
    assert len(tx.ctx.shape_env.specialized) == 1
    assert [n.name for n in tx.output.graph.nodes] == ["x", "getitem", "getitem_2", "add"]


def test_unpack_ex_collects_the_middle_into_a_list():
    def f(xs):
        first, *middle, last = xs
        return first, middle, last

    tx = trace(f, (1, 2, 3, 4))
    assert_ran(tx, f, "UNPACK_EX")
    assert tx.result.as_python_constant() == (1, [2, 3], 4)


def test_unpack_ex_with_too_few_items_raises_value_error():
    def f(xs):
        a, *b, c = xs
        return b

    with pytest.raises(UserException) as error:
        trace(f, (1,))
    assert isinstance(error.value.exc, ValueError)


def test_slice_with_a_symbolic_int_argument_is_a_graph_slice():
    def f(x, n):
        return x[1:n]

    tx = trace(f, torch.ones(8), 5)
    assert tx.ctx.shape_env.specialized == {}
    assert_graph(tx, """
        x = placeholder L['x']
        n = placeholder L['n']
        getitem = operator.getitem(x, slice(1, n, None))
    """)

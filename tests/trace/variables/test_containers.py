"""Trackers for tuples, torch.Size, lists, dicts, sets and iterators: Python semantics over
trackers, mutations recorded as side effects (pdyn/variables/containers/core.py)."""

import operator

import pytest
import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import (DictVariable, IteratorVariable, ListVariable, SizeVariable,
                                       TupleVariable)
from pdyn.trace.variables.containers.sets import SetVariable
from tests.tracing import trace


def c(*values):
    return [ConstantVariable(v) for v in values]


def noop(x):
    return x


@pytest.fixture
def tx():
    return trace(noop, 1.5)


def test_sequence_indexing_and_slicing(tx):
    t = TupleVariable(c(1, 2, 3))
    assert t.getitem(tx, ConstantVariable(-1)).as_python_constant() == 3
    sliced = t.getitem(tx, ConstantVariable(slice(1, None)))
    assert isinstance(sliced, TupleVariable) and sliced.as_python_constant() == (2, 3)


def test_sequence_index_out_of_range_raises_index_error(tx):
    with pytest.raises(UserException) as error:
        ListVariable(c(1)).getitem(tx, ConstantVariable(3))
    assert isinstance(error.value.exc, IndexError)


def test_sequence_index_by_a_tensor_is_unsupported(tx):
    def f(xs, i):
        return xs[i]

    with pytest.raises(Unsupported) as error:
        trace(f, [1.5, 2.5], torch.tensor(0))
    assert error.value.key == "non_constant_index"


def test_size_slice_is_a_size(tx):
    size = SizeVariable(c(2, 3, 4))
    assert isinstance(size.getitem(tx, ConstantVariable(slice(1, None))), SizeVariable)
    assert size.python_type() is torch.Size and size.as_python_constant() == torch.Size([2, 3, 4])
    assert size.call_method(tx, "numel", [], {}).as_python_constant() == 24


def test_concatenation_and_repetition_make_new_sequences(tx):
    a = ListVariable(c(1))
    assert a.binary_op(tx, operator.add, ListVariable(c(2))).as_python_constant() == [1, 2]
    assert TupleVariable(c(1)).binary_op(tx, operator.mul, ConstantVariable(3)).as_python_constant() \
        == (1, 1, 1)
    assert a.as_python_constant() == [1]


def test_adding_a_list_and_a_tuple_is_unsupported(tx):
    with pytest.raises(Unsupported) as error:
        ListVariable(c(1)).binary_op(tx, operator.add, TupleVariable(c(2)))
    assert error.value.key == "binary_op"


def test_list_mutation_through_an_alias_is_seen_and_recorded_as_a_side_effect():
    def f(xs):
        ys = xs
        ys.append(3.5)
        ys += [4.5]
        return len(xs)

    items = [1.5]
    tx = trace(f, items)
    assert tx.result.as_python_constant() == 3 and items == [1.5]
    (mutated,) = tx.ctx.side_effects.containers.values()
    assert mutated is tx.locals["xs"] and mutated.as_python_constant() == [1.5, 3.5, 4.5]


def test_list_made_in_the_trace_is_not_a_side_effect():
    def f(x):
        out = []
        out.append(x)
        return out

    tx = trace(f, torch.ones(1))
    assert not tx.ctx.side_effects


def test_list_methods(tx):
    items = ListVariable(c(3, 1, 2))
    items.call_method(tx, "insert", c(0, 9), {})
    assert items.call_method(tx, "pop", [], {}).as_python_constant() == 2
    items.call_method(tx, "remove", c(9), {})
    assert items.call_method(tx, "index", c(1), {}).as_python_constant() == 1
    assert items.call_method(tx, "count", c(3), {}).as_python_constant() == 1
    items.call_method(tx, "sort", [], {"reverse": ConstantVariable(True)})
    assert items.as_python_constant() == [3, 1]
    items.call_method(tx, "reverse", [], {})
    assert items.as_python_constant() == [1, 3]
    copy = items.call_method(tx, "copy", [], {})
    items.call_method(tx, "clear", [], {})
    assert copy.as_python_constant() == [1, 3] and items.as_python_constant() == []


def test_list_pop_of_an_empty_list_raises_index_error(tx):
    with pytest.raises(UserException) as error:
        ListVariable([]).call_method(tx, "pop", [], {})
    assert isinstance(error.value.exc, IndexError)


def test_list_index_of_a_missing_value_raises_value_error(tx):
    with pytest.raises(UserException) as error:
        ListVariable(c(1)).call_method(tx, "index", c(5), {})
    assert isinstance(error.value.exc, ValueError)


def test_unknown_list_method_is_unsupported(tx):
    with pytest.raises(Unsupported) as error:
        ListVariable(c(1)).call_method(tx, "frobnicate", [], {})
    assert error.value.key == "list_method"


def test_missing_attribute_of_a_list_raises_attribute_error(tx):
    with pytest.raises(UserException) as error:
        ListVariable([]).getattr(tx, "nope")
    assert isinstance(error.value.exc, AttributeError) and "'list'" in str(error.value.exc)


def test_list_slice_assignment_and_deletion(tx):
    items = ListVariable(c(1, 2, 3))
    items.setitem(tx, ConstantVariable(slice(0, 2)), TupleVariable(c(7)))
    assert items.as_python_constant() == [7, 3]
    items.delitem(tx, ConstantVariable(0))
    assert items.as_python_constant() == [3]


def test_sequence_contains_by_value_or_by_identity(tx):
    x = trace(noop, torch.ones(1)).locals["x"]
    assert TupleVariable(c(1, 2)).contains(tx, ConstantVariable(2))
    assert TupleVariable([x]).contains(tx, x)


def test_dict_methods(tx):
    d = DictVariable({"a": ConstantVariable(1)})
    assert d.call_method(tx, "get", c("z", 0), {}).as_python_constant() == 0
    assert d.call_method(tx, "setdefault", c("b", 2), {}).as_python_constant() == 2
    d.call_method(tx, "update", [DictVariable({"c": ConstantVariable(3)})], {"d": ConstantVariable(4)})
    assert d.call_method(tx, "pop", c("a"), {}).as_python_constant() == 1
    assert d.as_python_constant() == {"b": 2, "c": 3, "d": 4}
    assert d.call_method(tx, "__contains__", c("c"), {}).as_python_constant() is True
    d.call_method(tx, "clear", [], {})
    assert d.truth(tx) is False


def test_dict_views_are_live(tx):
    d = DictVariable({"a": ConstantVariable(1)})
    keys = d.call_method(tx, "keys", [], {})
    items = d.call_method(tx, "items", [], {})
    d.setitem(tx, ConstantVariable("b"), ConstantVariable(2))
    assert [k.as_python_constant() for k in keys.iterate(tx)] == ["a", "b"]
    assert [i.as_python_constant() for i in items.iterate(tx)] == [("a", 1), ("b", 2)]
    assert keys.length(tx).as_python_constant() == 2 and keys.contains(tx, ConstantVariable("b"))


def test_dict_missing_key_raises_key_error(tx):
    d = DictVariable({})
    for op in (lambda: d.getitem(tx, ConstantVariable("k")), lambda: d.delitem(tx, ConstantVariable("k")),
               lambda: d.call_method(tx, "pop", c("k"), {})):
        with pytest.raises(UserException) as error:
            op()
        assert isinstance(error.value.exc, KeyError)


def test_dict_update_with_a_non_dict_and_unknown_methods_are_unsupported(tx):
    d = DictVariable({})
    with pytest.raises(Unsupported) as error:
        d.call_method(tx, "update", [ListVariable([])], {})
    assert error.value.key == "dict_update"
    with pytest.raises(Unsupported) as error:
        d.call_method(tx, "popitem", [], {})
    assert error.value.key == "dict_method"


def test_dict_mutation_of_an_input_is_a_side_effect():
    def f(d, x):
        d["y"] = x * 2
        return x

    tx = trace(f, {"a": 1.5}, torch.ones(1))
    (mutated,) = tx.ctx.side_effects.containers.values()
    assert list(mutated.items) == ["a", "y"]


def test_set_deduplicates_and_folds_methods(tx):
    s = SetVariable(c(1, 2, 1))
    s.call_method(tx, "add", c(3), {})
    s.call_method(tx, "update", [TupleVariable(c(4))], {})
    assert s.as_python_constant() == {1, 2, 3, 4}
    assert s.contains(tx, ConstantVariable(4))
    assert s.call_method(tx, "union", [ConstantVariable(frozenset({9}))], {}).as_python_constant() == {1, 2, 3, 4, 9}


def test_set_of_a_tensor_is_unsupported():
    def f(x):
        return {x}

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "non_constant_index"


def test_iterator_over_a_list_reads_it_live(tx):
    items = ListVariable(c(1))
    it = IteratorVariable(items)
    assert it.next().as_python_constant() == 1
    items.items.append(ConstantVariable(2))
    assert it.next().as_python_constant() == 2
    assert it.next() is None


def test_iterating_an_iterator_consumes_the_rest(tx):
    it = IteratorVariable(c(1, 2, 3))
    it.next()
    assert [v.as_python_constant() for v in it.iterate(tx)] == [2, 3]
    assert it.iterate(tx) == []


def test_unsupported_dict_method_in_a_trace_points_at_the_users_line():
    def f(d):
        return d.popitem()

    with pytest.raises(Unsupported) as error:
        trace(f, {"a": 1.5})
    assert error.value.key == "dict_method"
    assert error.value.loc is not None and error.value.loc.lineno == f.__code__.co_firstlineno + 1

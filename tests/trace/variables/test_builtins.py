"""Rules for Python builtins and pure library functions called during a trace
(pdyn/variables/builtins.py)."""

import math
import operator

import pytest
import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.containers.core import IteratorVariable, ListVariable
from pdyn.trace.variables.values.symint import SymIntVariable
from tests.tracing import assert_graph, trace


def test_len_of_a_list_a_dict_and_a_tensor():
    def f(xs, d, x):
        return len(xs), len(d), len(x)

    tx = trace(f, [1.5, 2.5], {"a": 1.5}, torch.ones(5, 2))
    n_list, n_dict, n_rows = tx.result.items
    assert (n_list.as_python_constant(), n_dict.as_python_constant()) == (2, 1)
    assert isinstance(n_rows, SymIntVariable) and str(n_rows.expr) == "s0"


def test_len_of_a_0d_tensor_raises_type_error():
    def f(x):
        return len(x)

    with pytest.raises(UserException) as error:
        trace(f, torch.tensor(1.0))
    assert isinstance(error.value.exc, TypeError)


def test_isinstance_and_type_use_the_trackers_python_type():
    def f(x, xs):
        return isinstance(x, torch.Tensor), isinstance(xs, (tuple, list)), type(xs) is list

    tx = trace(f, torch.ones(1), [1.5])
    assert tx.result.as_python_constant() == (True, True, True)


def test_getattr_with_a_default_and_hasattr():
    def f(x):
        return getattr(x, "nope", 3.5), hasattr(x, "nope"), hasattr(x, "dtype"), getattr(x, "ndim")

    tx = trace(f, torch.ones(2, 2))
    assert tx.result.as_python_constant() == (3.5, False, True, 2)


def test_iter_and_next_walk_a_list_and_stop_iteration_is_the_users():
    def f(xs):
        it = iter(xs)
        return next(it), next(it), next(it, "done")

    tx = trace(f, ["a", "b"])
    assert tx.result.as_python_constant() == ("a", "b", "done")

    def g(xs):
        return next(iter(xs))

    with pytest.raises(UserException) as error:
        trace(g, [])
    assert isinstance(error.value.exc, StopIteration)


def test_enumerate_zip_and_reversed_make_iterators():
    def f(xs, ys):
        return list(enumerate(xs, 1)), list(zip(xs, ys)), list(reversed(xs))

    tx = trace(f, ("a", "b"), ("c", "d"))
    assert tx.result.as_python_constant() == ([(1, "a"), (2, "b")], [("a", "c"), ("b", "d")], ["b", "a"])


def test_zip_strict_with_different_lengths_raises_value_error():
    def f(xs, ys):
        return list(zip(xs, ys, strict=True))

    with pytest.raises(UserException) as error:
        trace(f, ("a",), ("b", "c"))
    assert isinstance(error.value.exc, ValueError)


def test_reversed_of_a_dict_is_unsupported():
    def f(d):
        return reversed(d)

    with pytest.raises(Unsupported) as error:
        trace(f, {"a": 1.5})
    assert error.value.key == "reversed"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_list_tuple_dict_and_set_constructors():
    def f(xs):
        return list(xs), tuple(xs), dict(zip(xs, xs), k="v"), set(xs), frozenset(xs)

    tx = trace(f, ("a", "b"))
    assert tx.result.as_python_constant() == (["a", "b"], ("a", "b"), {"a": "a", "b": "b", "k": "v"},
                                              {"a", "b"}, frozenset({"a", "b"}))
    assert isinstance(tx.result.items[0], ListVariable)


def test_sorted_of_sizes_is_a_value_read():
    def f(x):
        return sorted([x.size(1), x.size(0)], reverse=True)

    tx = trace(f, torch.ones(3, 5))
    assert [v.hint() for v in tx.result.items] == [5, 3]
    assert len(tx.ctx.shape_env.specialized) == 2


def test_sorted_by_a_tensor_key_is_unsupported():
    def f(xs):
        return sorted(xs, key=lambda t: t.sum())

    with pytest.raises(Unsupported) as error:   # its `<` reads tensor data
        trace(f, [torch.ones(1), torch.zeros(1)])
    assert error.value.key == "data_dependent_branch"


def test_sum_of_tensors_records_additions():
    def f(xs):
        return sum(xs)

    tx = trace(f, [torch.ones(1), torch.ones(1)])
    assert_graph(tx, """
        xs_0 = placeholder L['xs'][0]
        xs_1 = placeholder L['xs'][1]
        add = operator.add(0, xs_0)
        add_2 = operator.add(add, xs_1)
    """)


def test_min_of_sizes_stays_symbolic_without_a_guard():
    def f(x):
        return min(x.size(0), 4), max(x.size(0), x.size(1))

    tx = trace(f, torch.ones(6, 3))
    low, high = tx.result.items
    assert str(low.expr) == "Min(4, s0)" and str(high.expr) == "Max(s0, s1)"
    assert tx.ctx.shape_env.guards == [] and tx.ctx.shape_env.specialized == {}


def test_max_of_constants_and_of_an_empty_list():
    def f(xs):
        return max(xs), min(3, 1, 2)

    assert trace(f, (1.5, 4.5)).result.as_python_constant() == (4.5, 1)

    def g(xs):
        return max(xs)

    with pytest.raises(UserException) as error:
        trace(g, ())
    assert isinstance(error.value.exc, ValueError)


def test_min_max_with_key_and_default():
    def f(xs):
        return min(xs, key=abs), max(xs, key=abs), min((), default=7), max(xs, key=None)

    assert trace(f, (1.5, -2.5)).result.as_python_constant() == (1.5, -2.5, 7, 1.5)

    def g(xs):
        return min(1, 2, default=0)  # Python refuses default= with several arguments; pdyn breaks

    with pytest.raises(Unsupported) as error:
        trace(g, (1.5,))
    assert error.value.key == "minmax_kwargs"


def test_any_and_all_on_size_comparisons_guard_each_read():
    def f(x):
        return any(s > 4 for s in [x.size(0), x.size(1)]), all([x.size(0) > 2, x.size(1) > 2])

    tx = trace(f, torch.ones(3, 8))
    assert tx.result.as_python_constant() == (True, True)
    assert [str(g.expr) for g in tx.ctx.shape_env.guards] == ["s0 <= 4", "s1 > 4", "s0 > 2"]  # s1 > 2 follows from s1 > 4


def test_abs_bool_and_callable():
    def f(x, k):
        return abs(-k), bool(k), callable(torch.relu), callable(k), abs(x)

    tx = trace(f, torch.ones(1), 2.5)
    assert [v.as_python_constant() for v in tx.result.items[:4]] == [2.5, True, True, False]
    assert tx.result.items[4].node.target is abs


def test_math_function_of_a_size_stays_symbolic():
    def f(x):
        return x / math.sqrt(x.size(-1))

    tx = trace(f, torch.ones(2, 16))
    assert tx.ctx.shape_env.specialized == {}
    assert_graph(tx, """
        x = placeholder L['x']
        size = x.size(1)
        sqrt = math.sqrt(size)
        truediv = operator.truediv(x, sqrt)
    """)


def test_pure_builtin_of_a_size_is_a_value_read():
    def f(x):
        return str(x.size(0)), math.gcd(x.size(0), 4)

    tx = trace(f, torch.ones(6))
    assert tx.result.as_python_constant() == ("6", 2)
    assert [spec.why for spec in tx.ctx.shape_env.specialized.values()] == ["str()"]


def test_operator_functions_dispatch_like_the_operators():
    def f(x, xs):
        return operator.add(x, 1), operator.getitem(xs, 0), operator.contains(xs, "a"), operator.neg(x)

    tx = trace(f, torch.ones(1), ["a"])
    assert tx.result.items[1].as_python_constant() == "a" and tx.result.items[2].as_python_constant() is True
    assert [n.name for n in tx.output.graph.nodes] == ["x", "add", "neg"]


def test_pure_builtin_of_a_tensor_is_unsupported():
    def f(x):
        return round(x)

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "builtin_args"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_unknown_builtin_is_unsupported_with_a_hint():
    def f(x):
        return vars(x)

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "builtin" and error.value.hint
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_print_is_unsupported_with_its_own_key():
    def f(x):
        print("hi")
        return x

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "print"


def test_next_of_a_non_iterator_is_unsupported():
    def f(xs):
        return next(xs)

    with pytest.raises(Unsupported) as error:
        trace(f, ["a"])
    assert error.value.key == "next"


def test_setattr_on_an_object_is_a_side_effect_and_on_a_tensor_unsupported():
    class Obj:
        pass

    def f(o, x):
        setattr(o, "y", 2.5)
        return o.y

    tx = trace(f, Obj(), torch.ones(1))
    assert tx.result.as_python_constant() == 2.5 and tx.ctx.side_effects

    def g(x):
        setattr(x, "y", 1)

    with pytest.raises(Unsupported) as error:
        trace(g, torch.ones(1))
    assert error.value.key == "store_attr"


def test_iter_over_an_iterator_is_itself():
    def f(xs):
        it = iter(xs)
        return iter(it) is it

    tx = trace(f, ["a"])
    assert tx.result.as_python_constant() is True
    assert isinstance(tx.locals["it"], IteratorVariable)

"""Trackers for callables: user functions (inlined, with Python's argument binding), bound methods,
partials, super(), builtins and classes (pdyn/variables/functions/user_functions.py)."""

import functools

import pytest
import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import EqualsGuard
from pdyn.sources import AttrSource, DefaultSource, GlobalSource, ItemSource
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.functions.user_functions import PartialVariable, UserFunctionVariable, bind_arguments
from tests.tracing import assert_graph, guards_of, trace


def affine(x, w=0.5, *rest, b, scale=1.5, **extra):
    return x * w + b


def pos_only(a, /, b):
    return a - b


def make_adder(k):
    return lambda v: v + k


ADD_HALF = make_adder(0.5)


class Base:
    def forward(self, x):
        return x + 1

    @staticmethod
    def helper(x):
        return x * 3

    @classmethod
    def make(cls):
        return cls.__name__


class Child(Base):
    def forward(self, x):
        return super().forward(x) * 2


def noop(x):
    return x


def bind(fn, *args, **kwargs):
    tx = trace(noop, 1.5)
    vt = UserFunctionVariable(fn)
    return bind_arguments(vt, [ConstantVariable(a) for a in args],
                          {k: ConstantVariable(v) for k, v in kwargs.items()}, tx)


def test_bind_arguments_fills_defaults_varargs_and_varkw():
    bound = bind(affine, 1, 2, 3, 4, b=5, z=6)
    values = {k: v.as_python_constant() for k, v in bound.items()}
    assert values == {"x": 1, "w": 2, "rest": (3, 4), "b": 5, "scale": 1.5, "extra": {"z": 6}}


@pytest.mark.parametrize("args, kwargs, message", [
    ((), {"b": 1}, "missing required positional argument 'x'"),
    ((1,), {}, "missing required keyword-only argument 'b'"),
    ((1,), {"b": 1, "x": 2}, "got multiple values for argument 'x'"),
])
def test_bind_arguments_mismatch_is_the_type_error_eager_raises(args, kwargs, message):
    with pytest.raises(UserException) as error:
        bind(affine, *args, **kwargs)
    assert isinstance(error.value.exc, TypeError) and str(error.value.exc) == f"affine() {message}"


def test_bind_arguments_rejects_too_many_positionals_and_unknown_keywords():
    with pytest.raises(UserException, match="takes 2 positional arguments but 3 were given"):
        bind(pos_only, 1, 2, 3)
    with pytest.raises(UserException, match="unexpected keyword argument 'a'"):
        bind(pos_only, b=1, a=2)  # a is positional-only


def test_defaults_of_a_global_function_are_read_through_default_sources():
    def f(x):
        return affine(x, b=0.25)

    tx = trace(f, torch.ones(1))
    sources = [g.source for g in guards_of(tx, EqualsGuard)]
    assert DefaultSource(GlobalSource("affine"), 0) in sources
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 0.5)
        add = operator.add(mul, 0.25)
    """)


def test_closure_of_a_global_function_is_read_through_its_cell():
    def f(x):
        return ADD_HALF(x)

    tx = trace(f, torch.ones(1))
    cell = AttrSource(ItemSource(AttrSource(GlobalSource("ADD_HALF"), "__closure__"), 0), "cell_contents")
    assert cell in [g.source for g in guards_of(tx, EqualsGuard)]
    assert_graph(tx, """
        x = placeholder L['x']
        add = operator.add(x, 0.5)
    """)


def test_function_name_attributes_are_constants():
    def f(x):
        return affine.__name__, Child.forward.__qualname__

    tx = trace(f, torch.ones(1))
    assert tx.result.as_python_constant() == ("affine", "Child.forward")


def test_bound_method_call_passes_self():
    def f(obj, x):
        return obj.forward(x)

    tx = trace(f, Base(), torch.ones(1))
    assert_graph(tx, """
        x = placeholder L['x']
        add = operator.add(x, 1)
    """)


def test_zero_argument_super_finds_the_parent_method():
    def f(obj, x):
        return obj.forward(x)

    tx = trace(f, Child(), torch.ones(1))
    assert_graph(tx, """
        x = placeholder L['x']
        add = operator.add(x, 1)
        mul = operator.mul(add, 2)
    """)


def test_static_and_class_methods_read_from_a_class():
    def f(x):
        return Base.helper(x), Child.make()

    tx = trace(f, torch.ones(1))
    assert tx.result.items[1].as_python_constant() == "Child"
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 3)
    """)


def test_partial_prepends_its_arguments_and_its_keywords_yield_to_the_call():
    def f(x):
        p = functools.partial(affine, w=2.0, b=1.0)
        return p(x, b=3.0)

    tx = trace(f, torch.ones(1))
    assert isinstance(tx.locals["p"], PartialVariable)
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 2.0)
        add = operator.add(mul, 3.0)
    """)


def test_partial_of_a_partial_flattens():
    def f(x):
        p = functools.partial(functools.partial(affine, x), 2.0)
        return p.func, p.args, p(b=0.5)

    tx = trace(f, torch.ones(1))
    func, args, _ = tx.result.items
    assert isinstance(func, UserFunctionVariable) and func.code is affine.__code__
    assert len(args.items) == 2


def test_partial_input_reads_its_parts_through_sources():
    def f(p, x):
        return p(x)

    tx = trace(f, functools.partial(affine, b=0.25), torch.ones(1))
    assert tx.result.node.name == "add"


def test_constructing_a_module_with_parameters_in_the_trace_is_unsupported_with_a_hint():
    def f(x):
        return torch.nn.Linear(1, 1)(x)

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "module_construction" and "__init__" in error.value.hint
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_constructing_a_user_class_makes_a_fresh_object():
    def f(x):
        return Base()

    tx = trace(f, torch.ones(1))
    assert tx.result.python_type() is Base and tx.result.source is None


def test_constructing_an_exception_and_a_device_is_folded():
    def f(x):
        return ValueError("bad"), torch.device("cpu")

    tx = trace(f, torch.ones(1))
    err, dev = tx.result.items
    assert isinstance(err.as_python_constant(), ValueError) and dev.as_python_constant() == torch.device("cpu")


def test_super_outside_a_method_is_unsupported():
    def f(x):
        return super()

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "super"


def test_nested_function_with_a_class_default_is_traced():
    def f(x):
        def g(v, m=torch.nn.ReLU):
            return v

        return g(x)

    tx = trace(f, torch.ones(1))
    assert tx.result.node.name == "x"

"""Calls and function creation: CALL (with folded KW_NAMES), CALL_FUNCTION_EX, MAKE_FUNCTION
(pdyn/handlers/calls.py)."""

import pytest
import torch

import pdyn
from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.functions.user_functions import UserFunctionVariable
from tests.tracing import assert_graph, assert_ran, trace


def scale(x, factor=2, *, shift=0):
    return x * factor + shift


def collect(*args, **kwargs):
    return args, kwargs


def gen(x):
    yield x


def test_call_with_positional_and_keyword_arguments_inlines_the_callee():
    def f(x):
        return scale(x, 3, shift=1)

    tx = trace(f, torch.ones(2))
    assert_ran(tx, f, "CALL")
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 3)
        add = operator.add(mul, 1)
    """)


def test_call_uses_the_callees_defaults_read_through_their_source():
    def f(x):
        return scale(x)

    tx = trace(f, torch.ones(2))
    # an int default is an int read from the frame: symbolic (a graph input), as int arguments are
    assert_graph(tx, """
        x = placeholder L['x']
        g_scale___defaults___0 = placeholder G['scale'].__defaults__[0]
        mul = operator.mul(x, g_scale___defaults___0)
        add = operator.add(mul, 0)
    """)


def test_call_of_a_torch_function_with_keywords_records_them():
    def f(x):
        return torch.sum(x, dim=0, keepdim=True)

    tx = trace(f, torch.ones(2, 3))
    assert_graph(tx, """
        x = placeholder L['x']
        sum_1 = torch.sum(x, dim=0, keepdim=True)
    """)


def test_call_of_a_method_passes_self_first():
    def f(x):
        return x.add(1, alpha=2)

    tx = trace(f, torch.ones(2))
    assert_graph(tx, """
        x = placeholder L['x']
        add = x.add(1, alpha=2)
    """)


def test_call_with_a_wrong_argument_count_raises_the_users_type_error():
    def f(x):
        return scale(x, 1, 2, 3)

    with pytest.raises(UserException) as error:
        trace(f, torch.ones(2))
    assert isinstance(error.value.exc, TypeError) and "positional" in str(error.value.exc)
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_call_of_print_is_unsupported_with_a_hint_and_the_users_line():
    def f(x):
        print(x)
        return x

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(2))
    assert error.value.key == "print" and error.value.hint
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_call_of_a_generator_function_runs_its_body_lazily():
    def f(x):
        return list(gen(x))

    tx = trace(f, torch.ones(2))
    assert {"RETURN_GENERATOR", "YIELD_VALUE"} <= tx.executed_opnames
    assert len(tx.result.items) == len(list(gen(torch.ones(2))))


def test_call_of_pdyn_graph_break_is_a_graph_break():
    def f(x):
        pdyn.graph_break()
        return x

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(2))
    assert error.value.key == "graph_break"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_call_function_ex_unpacks_positional_and_keyword_arguments():
    def f(args, kwargs):
        return collect(*args, **kwargs)

    tx = trace(f, (1.5, "a"), {"k": 2.5})
    assert_ran(tx, f, "CALL_FUNCTION_EX")
    assert tx.result.as_python_constant() == ((1.5, "a"), {"k": 2.5})


def test_call_function_ex_without_keywords():
    def f(x, args):
        return torch.cat(*args)

    tx = trace(f, torch.ones(1), ([torch.ones(2), torch.zeros(2)],))
    assert_ran(tx, f, "CALL_FUNCTION_EX")
    assert_graph(tx, """
        x = placeholder L['x']
        args_0_0 = placeholder L['args'][0][0]
        args_0_1 = placeholder L['args'][0][1]
        cat = torch.cat([args_0_0, args_0_1])
    """)


def test_call_function_ex_of_a_non_iterable_is_unsupported():
    def f(x, b):
        return collect(*b)

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1), len)
    assert error.value.key == "iterate"


def test_make_function_with_defaults_and_keyword_defaults():
    def f(x):
        def g(v, a=2, *, b=3):
            return v * a + b

        return g(x), g(x, 5, b=7)

    tx = trace(f, torch.ones(1))
    assert_ran(tx, f, "MAKE_FUNCTION")
    assert isinstance(tx.locals["g"], UserFunctionVariable)
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 2)
        add = operator.add(mul, 3)
        mul_2 = operator.mul(x, 5)
        add_2 = operator.add(mul_2, 7)
    """)


def test_make_function_with_a_closure_reads_the_enclosing_cell():
    def f(x, k):
        add_k = lambda v: v + k  # noqa: E731
        return add_k(x)

    tx = trace(f, torch.ones(1), 2.5)
    assert_graph(tx, """
        x = placeholder L['x']
        add = operator.add(x, 2.5)
    """)


def test_make_function_with_a_tensor_default_is_traced():
    def f(x):
        def g(v=x * 2):
            return v + 1

        return g()

    tx = trace(f, torch.ones(1))
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 2)
        add = operator.add(mul, 1)
    """)

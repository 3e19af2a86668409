"""Jumps, loops, returns, raises and asserts (pdyn/handlers/control.py)."""

import sys
import textwrap

import pytest
import torch

from pdyn.base.config import Config
from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.values.constant import ConstantVariable
from tests.tracing import assert_graph, assert_ran, opnames, trace


class Ctx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def unrewritten(source):
    """A function compiled outside this module, so pytest does not rewrite its `assert`."""
    namespace = {"torch": torch}
    exec(compile(textwrap.dedent(source).strip(), "<traced>", "exec"), namespace)
    return namespace["f"]


def test_pop_jump_if_false_takes_the_branch_the_constant_selects():
    def f(x, flag):
        if flag:
            return x * 2
        return x - 1

    assert_graph(trace(f, torch.ones(2), False), """
        x = placeholder L['x']
        sub = operator.sub(x, 1)
    """)
    tx = trace(f, torch.ones(2), True)
    assert_ran(tx, f, "POP_JUMP_IF_FALSE")
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 2)
    """)


def test_pop_jump_if_true_on_a_size_guards_the_comparison():
    def f(x):
        if not x.size(0) > 4:
            return x
        return x + 1

    tx = trace(f, torch.ones(8))
    assert "POP_JUMP_IF_TRUE" in tx.executed_opnames
    assert [str(g.expr) for g in tx.ctx.shape_env.guards] == ["s0 > 4"]
    assert tx.ctx.shape_env.specialized == {}
    assert tx.result.node.name == "add"


def test_pop_jump_if_none_and_not_none():
    def f(x, bias):
        if bias is not None:
            x = x + bias
        if bias is None:
            x = x * 0
        return x

    tx = trace(f, torch.ones(2), None)
    assert {"POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE"} & tx.executed_opnames
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 0)
    """)


def test_jump_if_false_or_pop_keeps_the_falsy_operand_of_and():
    def f(a, b):
        return a and b

    tx = trace(f, 0.0, "b")
    assert_ran(tx, f, "JUMP_IF_FALSE_OR_POP" if sys.version_info < (3, 12) else "POP_JUMP_IF_FALSE")
    assert tx.result.as_python_constant() == 0.0
    assert trace(f, 2.5, "b").result.as_python_constant() == "b"


def test_jump_if_true_or_pop_keeps_the_truthy_operand_of_or():
    def f(a, b):
        return a or b

    tx = trace(f, "", 2.5)
    assert_ran(tx, f, "JUMP_IF_TRUE_OR_POP" if sys.version_info < (3, 12) else "POP_JUMP_IF_TRUE")
    assert tx.result.as_python_constant() == 2.5


def test_for_loop_over_a_list_is_unrolled():
    def f(xs):
        total = xs[0]
        for v in xs[1:]:
            total = total + v
        return total

    tx = trace(f, [torch.ones(2), torch.ones(2), torch.ones(2)])
    assert_ran(tx, f, "GET_ITER", "FOR_ITER", "JUMP")
    assert_graph(tx, """
        xs_0 = placeholder L['xs'][0]
        xs_1 = placeholder L['xs'][1]
        xs_2 = placeholder L['xs'][2]
        add = operator.add(xs_0, xs_1)
        add_2 = operator.add(add, xs_2)
    """)


def test_for_loop_over_range_of_a_size_specializes_that_size():
    def f(x):
        for i in range(x.size(0)):
            x = x + i
        return x

    tx = trace(f, torch.ones(3, 5))
    env = tx.ctx.shape_env
    assert [str(s) for s in env.specialized] == ["s0"] and env.specialized[next(iter(env.specialized))].value == 3
    assert [n.name for n in tx.output.graph.nodes] == ["x", "add", "add_2", "add_3"]


def test_for_loop_over_a_tensor_is_unrolled_over_its_rows():
    def f(x):
        out = []
        for row in x:
            out.append(row)
        return out

    tx = trace(f, torch.ones(2, 3))
    assert len(tx.result.items) == 2
    assert [str(s) for s in tx.ctx.shape_env.specialized] == ["s0"]


def test_while_loop_on_a_python_counter_runs_to_the_end():
    def f(x):
        i = 0
        while i < 3:
            x = x * 2
            i += 1
        return x

    tx = trace(f, torch.ones(2))
    assert [n.name for n in tx.output.graph.nodes] == ["x", "mul", "mul_2", "mul_3"]


def test_loop_that_never_ends_stops_at_max_trace_steps():
    def f(x):
        while True:
            x = x + 1

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1), config=Config(max_trace_steps=100))
    assert error.value.key == "trace_too_long"


def test_branch_on_a_tensor_is_a_data_dependent_branch_at_the_users_line():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(2))
    assert error.value.key == "data_dependent_branch" and "torch.where" in error.value.hint
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1
    assert error.value.loc.filename == __file__


def test_return_value_ends_the_frame_with_the_top_of_the_stack():
    def f(x):
        return x
        x = x + 1  # noqa: unreachable

    tx = trace(f, torch.ones(1))
    assert_ran(tx, f, "RETURN_VALUE")
    assert tx.result is tx.locals["x"] and tx.stack == []


def test_return_of_a_constant_returns_a_constant_tracker():
    def f(x):
        x + 1
        return None

    tx = trace(f, torch.ones(1))
    assert isinstance(tx.result, ConstantVariable) and tx.result.value is None


@pytest.mark.skipif(sys.version_info < (3, 12), reason="RETURN_CONST exists from Python 3.12")
def test_return_const_returns_the_constant():
    def f(x):
        return 7

    tx = trace(f, torch.ones(1))
    assert_ran(tx, f, "RETURN_CONST")
    assert tx.result.as_python_constant() == 7


def test_failing_assert_raises_the_users_assertion_error():
    f = unrewritten("""
        def f(x):
            assert x.dim() == 3, "needs 3 dims"
            return x
    """)
    assert {"LOAD_ASSERTION_ERROR", "RAISE_VARARGS"} <= opnames(f)
    with pytest.raises(UserException) as error:
        trace(f, torch.ones(2))
    assert isinstance(error.value.exc, AssertionError) and str(error.value.exc) == "needs 3 dims"
    assert error.value.loc.lineno == 2


def test_assert_on_a_size_that_holds_guards_it_and_keeps_the_dim_dynamic():
    f = unrewritten("""
        def f(x):
            assert x.size(0) % 8 == 0
            return x + 1
    """)
    tx = trace(f, torch.ones(16))
    assert [str(g.expr) for g in tx.ctx.shape_env.guards] == ["Eq(Mod(s0, 8), 0)"]
    assert tx.ctx.shape_env.specialized == {}


def test_raise_of_an_exception_instance_is_the_users_exception():
    def f(x):
        raise ValueError("bad input")

    with pytest.raises(UserException) as error:
        trace(f, torch.ones(1))
    assert type(error.value.exc) is ValueError and str(error.value.exc) == "bad input"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_raise_of_an_exception_class_instantiates_it():
    def f(x):
        raise KeyError

    with pytest.raises(UserException) as error:
        trace(f, torch.ones(1))
    assert type(error.value.exc) is KeyError


def test_bare_raise_is_unsupported():
    def f(x):
        raise

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "raise"
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_raise_of_a_non_exception_is_unsupported():
    def f(x):
        raise x

    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(1))
    assert error.value.key == "raise"


def test_with_block_of_a_user_context_manager_inlines_enter_and_exit():
    def f(x, ctx):
        with ctx as c:
            return x + 1, c

    assert "BEFORE_WITH" in opnames(f)
    tx = trace(f, torch.ones(1), Ctx())
    assert {"BEFORE_WITH", "RETURN_VALUE"} <= tx.executed_opnames

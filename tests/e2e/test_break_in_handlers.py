"""A graph break inside an `except` body or the exception path of `finally`: the frame code runs the
breaking instruction while handling the exception (rebuilt from its type and args where the trace
made it), and the resume function re-enters the handler by raising it in its prologue, so a bare
`raise`, `sys.exc_info()`, a new exception's `__context__` and leaving the handler behave as eager,
and the code after the break (in and after the handler) is compiled. Each case against eager, with
exact graphs (their ops), breaks, compiles and fallbacks."""

from __future__ import annotations

import sys

import pytest
import torch

import pdyn
from tests.e2e.test_break_in_blocks import run
from tests.helpers import CountingBackend, assert_same


class Custom(Exception):
    pass


class OwnInit(Exception):
    """An exception whose class has its own __init__: pdyn cannot tell that its args rebuild it."""

    def __init__(self, a, b):
        super().__init__(a + b)


def exc_state() -> str:
    kind, value, _ = sys.exc_info()
    return f"{kind and kind.__name__}: {value!r}"


def comparable(value):
    """`value` with each `sys.exc_info()` triple as the repr of its type and value (tracebacks differ)."""
    if isinstance(value, tuple) and len(value) == 3 and (value[0] is None or isinstance(value[0], type)):
        return repr(value[:2])
    if isinstance(value, tuple):
        return tuple(comparable(v) for v in value)
    return value


def handling(outer: BaseException, fn, *args):
    """`fn(*args)` called inside the caller's handler of `outer`."""
    try:
        raise outer
    except BaseException:
        return fn(*args)


def outcome(fn, *args, outer: BaseException | None = None):
    """(result, the exception raised with its context and cause, what sys.exc_info() says after)."""
    try:
        result = comparable(fn(*args) if outer is None else handling(outer, fn, *args))
        raised = None
    except Exception as e:  # noqa: BLE001
        result, raised = None, (repr(e), repr(e.__context__), repr(e.__cause__))
    return result, raised, exc_state()


def same_as_eager(fn, *calls, outer: type[BaseException] | None = None, graphs, breaks, compiles, fallbacks=0):
    """Each call against eager, with the context of what it raises and run inside a caller's handler
    of a fresh `outer()` where given; then the counts, as `run` asserts them."""
    pdyn.reset()
    backend = CountingBackend()
    opt = pdyn.optimize(fn, backend=backend)
    for args in calls:
        expected = outcome(fn, *args, outer=outer and outer("outer"))
        actual = outcome(opt, *args, outer=outer and outer("outer"))
        assert repr(actual[1:]) == repr(expected[1:])
        assert_same(actual[0], expected[0], "result")
    ops = [[n.name.rstrip("_0123456789") for n in g.graph.nodes if n.op not in ("placeholder", "output")]
           for g in backend.graphs]
    assert ops == graphs
    stats = pdyn.stats()
    assert (stats["graph_breaks"], stats["compiles"], stats["eager_fallbacks"]) == (breaks, compiles, fallbacks), stats


def test_except_as_e_then_a_break_compiles_the_rest_of_the_handler():
    def f(x):
        y = x + 1
        try:
            raise ValueError(3)
        except ValueError as e:
            print("handling", e)
            return y * e.args[0]

    # one break (print): the resume function reads `e.args` of the exception it re-enters with
    run(f, (torch.ones(2),), (torch.ones(3),), graphs=[["add"], ["mul"]], breaks=1, compiles=2)


def test_the_code_after_the_handler_is_compiled():
    def f(x):
        y = x + 1
        try:
            raise Custom("c")
        except Custom:
            print("handling")
            y = y * 2
        return y.sin()

    run(f, (torch.ones(2),), (torch.ones(2),), graphs=[["add"], ["mul", "sin"]], breaks=1, compiles=2)


def test_a_bare_raise_after_the_break_raises_the_same_exception():
    def f(x, log):
        y = x * 2
        try:
            raise Custom("boom")
        except Custom:
            print("handling")
            log.append(y + 1)
            raise

    # the resume function's trace ends raising: it runs as Python runs it (no graph of its own)
    same_as_eager(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["mul"]], breaks=1, compiles=1)


def test_sys_exc_info_inside_the_handler_and_after_it():
    def f(x):
        try:
            raise ValueError("seen")
        except ValueError:
            print("handling")
            inside = sys.exc_info()
            y = x + 1
        return y * 2, inside, sys.exc_info()

    # sys.exc_info() is traced (the re-entered exception; none at frame start, guarded): print breaks
    same_as_eager(f, (torch.ones(2),), (torch.ones(2),), graphs=[["add", "mul"]], breaks=1, compiles=2)


def test_sys_exc_info_when_the_caller_handles_an_exception():
    def f(x):
        try:
            raise ValueError("seen")
        except ValueError:
            print("handling")
            inside = sys.exc_info()
            y = x + 1
        return y * 2, inside, sys.exc_info()   # after the handler: the caller's KeyError again

    # the last sys.exc_info() (the caller's exception, handled at the resume function's start) breaks
    same_as_eager(f, (torch.ones(2),), (torch.ones(2),), outer=KeyError,
                  graphs=[["add", "mul"]], breaks=2, compiles=3)


def test_an_exception_raised_in_the_handler_after_the_break_has_the_handled_one_as_context():
    def f(x, log):
        try:
            raise ValueError("inner")
        except ValueError:
            print("handling")
            log.append(x + 1)
            raise KeyError("new")

    same_as_eager(f, (torch.ones(2), []), graphs=[], breaks=1, compiles=1)
    same_as_eager(f, (torch.ones(2), []), outer=RuntimeError, graphs=[], breaks=1, compiles=1)


def test_an_exception_raised_after_the_handler_has_eagers_context():
    def f(x):
        try:
            raise ValueError("handled")
        except ValueError:
            print("handling")
        raise KeyError("after")   # its context is the caller's exception (None here), not ValueError

    same_as_eager(f, (torch.ones(2),), graphs=[], breaks=1, compiles=1)
    same_as_eager(f, (torch.ones(2),), outer=RuntimeError, graphs=[], breaks=1, compiles=1)


def test_a_break_in_the_exception_path_of_finally():
    def f(x, log):
        y = x - 1
        try:
            raise RuntimeError("r")
        finally:
            print("finally")
            log.append(y * 3)

    same_as_eager(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["sub"]], breaks=1, compiles=1)


def test_a_break_in_finally_that_returns_swallows_the_exception():
    def f(x):
        try:
            raise RuntimeError("r")
        finally:
            print("finally")
            return x * 3   # noqa: B012  (returning from finally drops the exception, as eager does)

    same_as_eager(f, (torch.ones(2),), (torch.ones(2),), graphs=[["mul"]], breaks=1, compiles=2)


def test_nested_handlers_are_each_re_entered():
    def f(x):
        try:
            raise ValueError("a")
        except ValueError:
            try:
                raise KeyError("b")
            except KeyError:
                print("nested")
                inner = sys.exc_info()
                y = x + 1
            z = y * 2
            middle = sys.exc_info()
        return z.sin(), inner, middle, sys.exc_info()

    same_as_eager(f, (torch.ones(2),), (torch.ones(2),), graphs=[["add", "mul", "sin"]], breaks=1, compiles=2)


def test_a_new_exception_in_a_nested_handler_chains_both():
    def f(x):
        try:
            raise ValueError("a")
        except ValueError:
            try:
                raise KeyError("b")
            except KeyError:
                print("nested")
                raise IndexError(int(x.sum()))

    same_as_eager(f, (torch.ones(2),), graphs=[["sum"]], breaks=2, compiles=2)
    opt = pdyn.optimize(f)
    with pytest.raises(IndexError) as info:
        opt(torch.ones(2))
    assert repr(info.value.__context__) == "KeyError('b')"
    assert repr(info.value.__context__.__context__) == "ValueError('a')"


def test_the_step_functions_own_exception_then_a_break_in_its_handler():
    def f(x, s):
        y = x + 1
        try:
            n = int(s)   # raises for real in the step function: the resume function raises it again
        except ValueError as e:
            print("bad number", e)
            n = -1
        return y * n

    # "3": int() folds in the trace, one graph. "x": the root recompiles and breaks at int(); the
    # resume function of the raised branch re-raises it in the try block, breaks at print, and the
    # multiply after the handler is compiled
    run(f, (torch.ones(2), "3"), (torch.ones(2), "x"),
        graphs=[["add", "mul"], ["add"], ["mul"]], breaks=2, compiles=4)


class Scale:
    """A user object: the frame guards only its type; the resume function reads `k`, guarded by value."""

    def __init__(self, k):
        self.k = k

    def __repr__(self):
        return f"Scale({self.k})"


def test_the_resume_function_run_eagerly_after_the_recompile_limit_is_right():
    def f(x, scale):
        y = x + 1
        try:
            raise ValueError("v")
        except ValueError:
            print("handling")
            inside = sys.exc_info()
            y = y * scale.k   # each k is a recompile of the resume function: the second runs it eagerly
        return y, inside, sys.exc_info()

    with pdyn.config.patch(recompile_limit=1):
        same_as_eager(f, (torch.ones(2), Scale(1.5)), (torch.ones(2), Scale(2.5)), (torch.ones(2), Scale(3.5)),
                      graphs=[["add"], ["mul"]], breaks=1, compiles=2, fallbacks=1)


def test_an_exception_pdyn_cannot_rebuild_runs_the_frame_eagerly():
    def f(x):
        try:
            raise OwnInit(1, 2)
        except OwnInit as e:
            print("handling", e)
            return x * 2

    run(f, (torch.ones(2),), graphs=[], breaks=0, compiles=1, fallbacks=1)


def test_the_step_function_raising_inside_a_handler_reaches_the_inner_handler():
    def f(x, s):
        y = x + 1
        try:
            raise ValueError("v")
        except ValueError:
            try:
                n = int(s)   # the step raises inside the handler; the inner handler catches it
            except ValueError:
                n = -1
                inner = sys.exc_info()
            y = y * n
        return y, inner, sys.exc_info()

    # s is guarded by value: the frame compiles per string; its resume functions are reused
    same_as_eager(f, (torch.ones(2), "x"), (torch.ones(2), "y"), outer=KeyError,
                  graphs=[["add"], ["mul"], ["add"]], breaks=3, compiles=4)


def test_the_step_functions_exception_escaping_a_handler_has_the_handled_one_as_context():
    def f(x, s):
        y = x + 1
        try:
            raise ValueError("v")
        except ValueError:
            n = int(s)   # raises for real inside the handler: escapes with ValueError('v') as context
            y = y * n
        return y

    # the raised branch's resume function ends raising: it runs as Python runs it
    same_as_eager(f, (torch.ones(2), "x"), (torch.ones(2), "y"), outer=KeyError,
                  graphs=[["add"], ["add"]], breaks=2, compiles=2)

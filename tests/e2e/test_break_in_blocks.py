"""Graph breaks inside `with` and `try` blocks: the resume function continues inside the user's
blocks, so the code after the break is compiled (its ops are in a graph), and an exception raised
by the breaking instruction or after it is handled as eager handles it; `finally` and `__exit__`
run once. Each case against eager (values, exceptions, side effects, grad mode after the call),
with exact graphs (their ops), breaks, compiles and fallbacks over every frame pdyn compiled."""

from __future__ import annotations

import contextlib

import torch

import pdyn
from tests.helpers import CountingBackend, check_calls


def run(fn, *calls, graphs: list[list[str]], breaks: int, compiles: int, fallbacks: int = 0):
    """Each call against eager, then the counts summed over the frame, its resume functions and
    callees; `graphs` lists each compiled graph's ops (fx node names without their number)."""
    pdyn.reset()
    backend = CountingBackend()
    grad = torch.is_grad_enabled()
    check_calls(fn, *calls, backend=backend)
    assert torch.is_grad_enabled() == grad, "grad mode changed by the call"
    ops = [[n.name.rstrip("_0123456789") for n in g.graph.nodes if n.op not in ("placeholder", "output")]
           for g in backend.graphs]
    assert ops == graphs
    stats = pdyn.stats()
    assert (stats["graph_breaks"], stats["compiles"], stats["eager_fallbacks"]) == \
        (breaks, compiles, fallbacks), stats


def helper(x, fail):
    """A callee that breaks, then raises where `fail` is set (the caller's break is its call)."""
    pdyn.graph_break()
    if fail:
        raise ValueError("helper failed")
    return x * 2


class Recorder:
    """A user context manager that logs its enter and exit (with the exception type it saw)."""

    def __init__(self, log, swallow=False):
        self.log, self.swallow = log, swallow

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, kind, value, tb):
        self.log.append(("exit", kind and kind.__name__))
        return self.swallow

    def __eq__(self, other):
        return type(other) is Recorder and (self.log, self.swallow) == (other.log, other.swallow)


def grad(*shape):
    return torch.ones(*shape, requires_grad=True)


# -- try ------------------------------------------------------------------------------------------

def test_a_break_in_a_try_body_compiles_the_rest_of_the_body():
    def f(x):
        y = x + 1
        try:
            print("in try")
            z = y * 2
        except ValueError:
            z = y - 1
        return z + 3

    run(f, (torch.ones(3),), (torch.ones(3),), graphs=[["add"], ["mul", "add"]], breaks=1, compiles=2)


def test_what_the_breaking_call_raises_goes_to_the_handler():
    def f(x, fail):
        y = x + 1
        try:
            z = helper(y, fail) + 1
        except ValueError as e:
            z = y - len(str(e))
        return z * 2

    # fail=False: f [add], helper's resume function [mul], f's [add, mul]. fail=True (a bool input
    # is guarded by value): f again [add], helper again; helper's resume function raises in its
    # trace (no entry: eager raises it) and the step hands it to f's handler: the resume function
    # of that branch raises it again in the try block and compiles the rest of the handler (`str(e)`
    # of the exception it received is read from its args) and after it [sub, mul]
    run(f, (torch.ones(3), False), (torch.ones(3), True), (torch.ones(3), False),
        graphs=[["add"], ["mul"], ["add", "mul"], ["add"], ["sub", "mul"]], breaks=4, compiles=7)


def test_finally_runs_once_on_either_path():
    def f(x, fail, log):
        try:
            y = x + 1
            z = helper(y, fail)
            log.append("body done")
        finally:
            log.append("finally")
        return z

    run(f, (torch.ones(2), False, []), (torch.ones(2), True, []),
        graphs=[["add"], ["mul"], ["add"]], breaks=4, compiles=6)


def test_a_try_inside_a_loop():
    def f(x):
        for i in range(3):
            try:
                x = x + i
                print("iteration", i)
                x = x * 2
            except RuntimeError:
                x = x - 100
        return x

    run(f, (torch.ones(2),), (torch.ones(2),),
        graphs=[["add"], ["mul", "add"], ["mul", "add"], ["mul"]], breaks=3, compiles=4)


def test_an_exception_raised_after_the_break_is_handled_in_the_resume_function():
    def f(x, k):
        y = x * 2
        try:
            print("before the raise")
            if k > 1:
                raise KeyError(k)
            y = y + 1
        except KeyError:
            y = y - 1
        return y

    run(f, (torch.ones(2), 1), (torch.ones(2), 5),
        graphs=[["mul"], ["add"], ["mul"], ["sub"]], breaks=2, compiles=4)


def test_a_break_in_the_normal_path_of_finally_is_compiled():
    def f(x):
        try:
            y = x + 1
        finally:
            print("finally")
            y = y * 2
        return y

    run(f, (torch.ones(2),), (torch.ones(2),), graphs=[["add"], ["mul"]], breaks=1, compiles=2)


def test_a_break_in_an_except_body_resumes_in_the_handler():
    def f(x):
        try:
            raise ValueError("v")
        except ValueError as e:
            print("handling", e)   # the frame code rebuilds the exception; the resume function re-enters the handler
            y = x * 2
        return y

    run(f, (torch.ones(2),), (torch.ones(2),), graphs=[["mul"]], breaks=1, compiles=2)


# -- with -----------------------------------------------------------------------------------------

def test_a_break_inside_no_grad_keeps_the_mode_for_the_rest_of_the_block():
    def f(x):
        y = x + 1
        with torch.no_grad():
            print("in no_grad")
            z = y * 2
        return z, y * 3, torch.is_grad_enabled()

    run(f, (grad(3),), (grad(3),),
        graphs=[["add", "_set_grad_enabled"], ["mul", "_set_grad_enabled", "mul"]], breaks=1, compiles=2)


def test_set_grad_enabled_and_enable_grad_inside_no_grad():
    def f(x):
        with torch.no_grad():
            a = x * 2
            with torch.enable_grad():
                pdyn.graph_break()
                b = x * 3
            with torch.set_grad_enabled(True):
                print("set_grad_enabled")
                c = x * 4
        return a, b, c

    run(f, (grad(2),), (grad(2),),
        graphs=[["_set_grad_enabled", "mul", "_set_grad_enabled"],
                ["mul", "_set_grad_enabled", "_set_grad_enabled"],
                ["mul", "_set_grad_enabled", "_set_grad_enabled"]], breaks=2, compiles=3)


def test_an_exception_from_the_break_inside_no_grad_restores_grad_mode():
    def f(x, fail):
        with torch.no_grad():
            y = helper(x, fail)
        return y + 1

    run(f, (grad(2), False), (grad(2), True), graphs=[["_set_grad_enabled"], ["mul"], ["_set_grad_enabled", "add"], ["_set_grad_enabled"]],
        breaks=4, compiles=6)


def test_a_user_context_manager_argument_exits_once():
    def f(x, rec):
        y = x + 1
        with rec:
            print("in the block")
            z = y * 2
        rec.log.append("after")
        return z

    run(f, (torch.ones(2), Recorder([])), (torch.ones(2), Recorder([])),
        graphs=[["add"], ["mul"]], breaks=1, compiles=2)


def test_a_user_context_manager_made_in_the_function():
    def f(x, log):
        with Recorder(log) as r:
            y = x + 1
            print("in the block")
            r.log.append("body")
            z = y * 2
        return z

    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["add"], ["mul"]], breaks=1, compiles=2)


def test_exit_that_swallows_what_the_break_raised():
    def f(x, fail, log):
        y = x + 1
        with Recorder(log, swallow=True):
            y = helper(y, fail)
        return y - 1

    # fail=True: the resume function of the raised branch is compiled too: the exit swallows, [sub]
    run(f, (torch.ones(2), False, []), (torch.ones(2), True, []), graphs=[["add"], ["mul"], ["sub"], ["add"], ["sub"]],
        breaks=4, compiles=7)


def test_exit_that_swallows_what_is_raised_after_the_break():
    def f(x, k, log):
        y = x + 1
        with Recorder(log, swallow=True):
            print("in the block")
            if k:
                raise KeyError("k")
            y = y * 2
        return y - 1

    run(f, (torch.ones(2), 0, []), (torch.ones(2), 1, []),
        graphs=[["add"], ["mul", "sub"], ["add"], ["sub"]], breaks=2, compiles=4)


def test_a_with_inside_a_try_whose_exit_lets_the_exception_go():
    def f(x, fail, log):
        try:
            with Recorder(log):
                y = helper(x, fail)
        except ValueError:
            log.append("caught")
            y = x
        return y + 1

    # fail=True: the resume function of the raised branch runs the exit and the handler, [add]
    run(f, (torch.ones(2), False, []), (torch.ones(2), True, []), graphs=[["mul"], ["add"], ["add"]],
        breaks=4, compiles=7)


def test_a_contextmanager_generator_around_the_break_is_entered_by_the_frame_code():
    @contextlib.contextmanager
    def scaled(log):
        log.append("in")
        yield 3
        log.append("out")

    def f(x, log):
        with scaled(log) as k:
            print("in the block")   # the trace restarts with a break before the with (test_break_in_contextmanager.py)
            y = x * k
        return y

    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["mul"]], breaks=3, compiles=4)

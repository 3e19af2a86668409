"""A graph break inside a `with` block of a `@contextlib.contextmanager` function. The generator
runs in the trace up to its `yield`, and that suspended frame exists only in the trace: the trace
restarts with a graph break before the with statement (pdyn/trace/variables/restart.py), the frame
code enters the manager for real, and the resume function runs the block with the real `__exit__`
(called as it is: its generator runs only for real). Each case against eager, the generator's
setup and teardown once each in eager's order (the log argument after each call is compared with
eager's), with exact graphs (their ops), breaks, compiles and fallbacks over every frame."""

from __future__ import annotations

import contextlib
import io

import torch

import pdyn
from tests.e2e.test_break_in_blocks import run

SINK = io.StringIO()


@contextlib.contextmanager
def managed(log, tag, swallow=False):
    log.append(("setup", tag))
    try:
        yield tag * 2
    except ValueError as e:
        log.append(("caught", str(e)))
        if not swallow:
            raise
    finally:
        log.append(("teardown", tag))


def test_a_break_in_the_block_compiles_before_and_after_it():
    def f(x, log):
        y = x + 1
        with managed(log, 3) as k:
            log.append("body")
            y = y * k
            print("break", file=SINK)
            y = y - 1
        return y + 3

    # f [add] breaks before the with (a restart); its resume function [mul] breaks at print; the
    # next [sub] breaks at the real __exit__ call; the last [add]
    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["add"], ["mul"], ["sub"], ["add"]],
        breaks=3, compiles=4)
    log = []
    pdyn.optimize(f)(torch.ones(2), log)
    assert log == [("setup", 3), "body", ("teardown", 3)]


def test_a_manager_made_before_the_with_is_made_again_by_the_frame_code():
    def f(x, log):
        y = x * 2
        cm = managed(log, 5)   # its generator has not started: rebuilt by calling the function again
        log.append("made")
        with cm as k:
            log.append("body")
            print("break", file=SINK)
            y = y + k
        return y

    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["mul"], ["add"]], breaks=3, compiles=4)
    log = []
    pdyn.optimize(f)(torch.ones(2), log)
    assert log == ["made", ("setup", 5), "body", ("teardown", 5)]


def test_an_exception_in_the_body_reaches_the_generators_except_and_is_swallowed():
    def f(x, fail, log):
        y = x + 1
        with managed(log, 1, swallow=True):
            print("break", file=SINK)
            y = y * 3
            if fail:
                raise ValueError("body failed")
            y = y + 5
        return y - 2

    # fail=True (a bool guarded by value): the resume function after print raises in its block,
    # and the real __exit__ runs in the handler: that function runs eagerly (the generator's
    # except swallows the error, as in eager)
    run(f, (torch.ones(2), False, []), (torch.ones(2), True, []),
        graphs=[["add"], ["mul", "add"], ["sub"], ["add"]], breaks=5, compiles=7, fallbacks=1)
    log = []
    pdyn.optimize(f)(torch.ones(2), True, log)
    assert log == [("setup", 1), ("caught", "body failed"), ("teardown", 1)]


def test_an_exception_the_generator_raises_again_reaches_the_caller():
    def f(x, log):
        with managed(log, 2):
            y = x + 1
            print("break", file=SINK)
            raise ValueError(f"failed at {y.sum().item()}")

    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["add"], ["sum"]], breaks=3, compiles=4, fallbacks=1)


def test_nested_managers_are_each_entered_once():
    def f(x, log):
        with managed(log, 1) as a:
            y = x + a
            with managed(log, 2) as b:
                print("break", file=SINK)
                y = y * b
            y = y - 1
        return y

    # f breaks before the outer with; the first resume function [add] before the inner with
    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["add"], ["mul"], ["sub"]], breaks=5, compiles=6)


def test_a_with_in_a_loop():
    def f(x, log):
        for i in range(3):
            with managed(log, i) as k:
                x = x + k
                print("break", file=SINK)
                x = x * 2
        return x

    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["add"], ["mul"]] * 3, breaks=9, compiles=10)


def test_a_with_in_a_callee_that_breaks():
    def callee(x, log):
        with managed(log, 7) as k:
            print("break", file=SINK)
            return x * k

    def f(x, log):
        return callee(x + 1, log) - 1

    # f [add] breaks at the call; callee (optimized on its own) restarts and breaks before its with
    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["add"], ["mul"], ["sub"]], breaks=4, compiles=6)


def test_the_forced_break_is_kept_for_the_next_compile_of_the_code(caplog):
    def f(x, tag, log):
        with managed(log, tag) as k:
            print("break", file=SINK)
            y = x * len(k)
        return y

    with caplog.at_level("INFO", logger="pdyn.graph_breaks"):
        # a str is guarded by value: f compiles twice, and traces again (a restart) only the first time
        run(f, (torch.ones(2), "a", []), (torch.ones(2), "bc", []), graphs=[["mul"]] * 2, breaks=6, compiles=7)
    restarts = [r for r in caplog.records if "again with a graph break" in r.getMessage()]
    assert len(restarts) == 1, [r.getMessage() for r in restarts]

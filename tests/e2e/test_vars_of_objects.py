"""`vars(obj)` of a user object: its `__dict__` as a view whose keys are the instance dict's, in
order (guarded by keys), changed by the trace's own stores and deletions. Against eager, with exact
graphs, breaks and compiles."""

from __future__ import annotations

import torch

from tests.e2e.test_break_in_blocks import run


class Cfg:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __eq__(self, other):
        return type(other) is Cfg and vars(other) == vars(self)


class Slotted:
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a

    def __eq__(self, other):
        return type(other) is Slotted and other.a == self.a


def test_vars_of_an_input_object():
    def f(c, x):
        d = vars(c)
        return x * len(d), list(d), dict(d), list(d.items()), list(d.values()), "a" in d, d.get("zz", 0)

    # another object with the same attribute names shares the entry; another set of names does not
    other = Cfg(5, 6)
    other.extra = 1
    run(f, (Cfg(2, 3), torch.ones(2)), (Cfg(4, 5), torch.ones(2)), (other, torch.ones(2)),
        graphs=[["mul"], ["mul"]], breaks=0, compiles=2)


def test_vars_sees_the_traces_own_stores_and_deletions():
    def f(c, x):
        c.z = x.sum()
        del c.a
        vars(c)["w"] = 7
        return [k for k in vars(c)], x + c.w

    run(f, (Cfg(1, 2), torch.ones(2)), graphs=[["sum", "add"]], breaks=0, compiles=1)


def test_vars_of_an_object_made_in_the_trace():
    def f(x):
        c = Cfg(x + 1, 2)
        return dict(vars(c)), len(vars(c))

    run(f, (torch.ones(2),), graphs=[["add"]], breaks=0, compiles=1)


def test_vars_of_an_object_without_a_dict_raises_eagers_type_error():
    def f(s, x):
        try:
            vars(s)
        except TypeError as e:
            return x * s.a, str(e)

    run(f, (Slotted(3), torch.ones(2)), graphs=[["mul"]], breaks=0, compiles=1)

"""pdyn.bytecode.routed: each call site whose callable the walk finds goes through the router
(plain, global, method-form, keyword, star and nested calls), the others are left as they are, and
the routed code computes what the original does."""

from __future__ import annotations

import types

from pdyn.bytecode.routed import routed_code


class Obj:
    def m(self, a, b=1):
        return a + b


def g(x):
    return x * 2


def program(o, xs, kw, flag):
    out = 0
    for x in xs:
        out += o.m(g(x), b=len(xs))          # method form, a global, keywords, a nested call
        out += g(*[x])                        # a call with a star
        out += (g if flag else abs)(x)        # the callable is chosen by a branch: not found
        out += o.m(**kw)
    return out


def test_every_site_but_a_branch_chosen_callable_is_routed():
    seen = []

    def router(value):
        seen.append(getattr(value, "__name__", type(value).__name__))
        return value
    code, routed = routed_code(program.__code__, lambda pos: router)
    fn = types.FunctionType(code, program.__globals__)
    assert routed == 5
    args = (Obj(), [1, 2], {"a": 1}, True)
    assert fn(*args) == program(*args)
    assert seen == ["m", "g", "len", "g", "m"] * 2


def test_a_router_replaces_the_callable():
    code, _ = routed_code(program.__code__, lambda pos: lambda value: (lambda *a, **k: 0))
    fn = types.FunctionType(code, program.__globals__)
    # only the branch-chosen call still runs: abs(x) for each x
    assert fn(Obj(), [-1, -2], {"a": 1}, False) == 3


def test_a_site_without_a_router_is_left_as_it_is():
    code, routed = routed_code(program.__code__, lambda pos: None)
    assert routed == 0
    args = (Obj(), [3], {"a": 1}, True)
    assert types.FunctionType(code, program.__globals__)(*args) == program(*args)

"""What Python's object model decides and a trace must not bake in: a method set on a module
instance shadows its class's, a module's class can change, `[[]] * 3` repeats one inner list, and
`len()`/`bool()` check what `__len__`/`__bool__` return."""

from __future__ import annotations

import abc

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend


class Inner(torch.nn.Module):
    def act(self, x):
        return x + 1

    def forward(self, x):
        return self.act(x)


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x) * 2


class Negated(Inner):
    def forward(self, x):
        return -x


def test_a_method_set_on_a_module_instance_is_called():
    eager, model = Outer(), Outer()
    opt = pdyn.optimize(model, backend=CountingBackend())
    x = torch.ones(2)
    torch.testing.assert_close(opt(x), eager(x))
    for patch in (lambda m: setattr(m.inner, "act", lambda x: x * 100),       # a method the forward calls
                  lambda m: setattr(m.inner, "forward", lambda x: x - 7)):    # forward itself (accelerate's hooks)
        patch(eager)
        patch(model)
        torch.testing.assert_close(opt(x), eager(x))
    assert pdyn.stats(opt)["compiles"] == 3


def test_a_module_whose_class_changed_runs_the_new_class():
    eager, model = Outer(), Outer()
    opt = pdyn.optimize(model, backend=CountingBackend())
    x = torch.ones(2)
    torch.testing.assert_close(opt(x), eager(x))
    eager.inner.__class__ = Negated
    model.inner.__class__ = Negated
    torch.testing.assert_close(opt(x), eager(x))


def test_repeating_a_list_repeats_references_to_its_items():
    def f(x, given):
        a = [[]] * 3
        a[0].append(x)
        b = 2 * [{}]
        b[1]["k"] = 1
        c = given * 2
        c[1].append(x)   # the caller's inner list
        return a, b, a[0] is a[2]

    opt = pdyn.optimize(f, backend=CountingBackend())
    x = torch.ones(1)
    eager_given, given = [[]], [[]]
    assert repr(opt(x, given)) == repr(f(x, eager_given))
    assert repr(given) == repr(eager_given)


class Length:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


class Truth:
    def __init__(self, v):
        self.v = v

    def __bool__(self):
        return self.v


@pytest.mark.parametrize("obj", [Length(-1), Length(1.5), Length(True), Length(3), Truth(1), Truth(False)],
                         ids=["negative", "float", "bool", "int", "int_bool", "false"])
def test_len_and_bool_check_what_the_dunder_returns(obj):
    def f(o, x):
        return (bool(o) if isinstance(o, Truth) else len(o)), x + 1

    results = []
    for fn in (f, pdyn.optimize(f, backend=CountingBackend())):
        try:
            value = fn(obj, torch.ones(1))[0]
            results.append((type(value), value))
        except (TypeError, ValueError) as e:
            results.append((type(e), str(e)))
    assert results[1] == results[0]


class Base(abc.ABC):
    pass


class Flagged(type):
    def __instancecheck__(cls, inst):
        return getattr(inst, "flag", False)


class Magic(metaclass=Flagged):
    pass


class Plain:
    pass


def test_isinstance_answers_the_type_alone_cannot_decide_are_not_baked_in():
    def f(o, x):
        return x + isinstance(o, Base) + 10 * isinstance(o, (int, Magic))

    opt = pdyn.optimize(f, backend=CountingBackend())
    o, x = Plain(), torch.zeros(1)
    torch.testing.assert_close(opt(o, x), f(o, x))
    Base.register(Plain)   # the ABC's registry changed: the guarded token with it
    o.flag = True          # the metaclass reads the instance: never folded
    torch.testing.assert_close(opt(o, x), f(o, x))
    assert f(o, x).item() == 11


def test_the_private_grad_mode_setter_is_traced_like_the_public_one():
    def f(x):
        torch._C._set_grad_enabled(False)
        return x * 2

    x = torch.ones(2, requires_grad=True)
    opt = pdyn.optimize(f, backend=CountingBackend())
    try:
        for fn in (f, opt):
            torch.set_grad_enabled(True)
            y = fn(x)
            assert (y.requires_grad, torch.is_grad_enabled()) == (False, False)
    finally:
        torch.set_grad_enabled(True)
    assert pdyn.stats(opt)["graphs"] == 1

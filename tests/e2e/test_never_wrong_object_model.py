"""What Python's object model decides and a trace must not bake in: a method set on a module
instance shadows its class's, a module's class can change, `[[]] * 3` repeats one inner list, and
`len()`/`bool()` check what `__len__`/`__bool__` return; what `type.__call__` and `object.__new__`
check (an abstract class, an `__init__` that returns a value) raises under pdyn as eagerly."""

from __future__ import annotations

import abc

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend
from tests.helpers import check_calls


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


class Head(abc.ABC):
    @abc.abstractmethod
    def forward(self, x): ...


class HalfDone(Head):
    pass


class Done(Head):
    def forward(self, x):
        return x + 1


def test_instantiating_an_abstract_class_raises():
    def make(x, kind):
        try:
            head = kind()
        except TypeError as e:
            return x * 0, str(e)
        return head.forward(x)

    def bare(x):
        return Head().forward(x)

    x = torch.ones(2)
    check_calls(make, (x, HalfDone), (x, Done), (x, HalfDone))
    check_calls(lambda x: object.__new__(HalfDone) and x, (x,))
    check_calls(bare, (x,), (x,))


class InitReturns:
    def __init__(self, x):
        self.x = x
        return x.sum() > 0 if x.dim() else 1


def test_an_init_that_returns_a_value_raises():
    def f(x):
        try:
            InitReturns(x)
        except TypeError as e:
            return x, str(e)
        return x + 1

    check_calls(f, (torch.ones(2),), (torch.tensor(1.),), (torch.ones(2),))


class Bag:
    """A container whose `__iter__` is a generator: each item is made as the loop asks for it."""

    def __init__(self, items, log):
        self.items, self.log = items, log

    def __iter__(self):
        for v in self.items:
            self.log.append(("yield", v))
            yield v


class Countdown:
    """An iterator class: `__iter__` returns self, `__next__` raises StopIteration."""

    def __init__(self, n, log):
        self.n, self.log = n, log

    def __iter__(self):
        return self

    def __next__(self):
        self.log.append(("next", self.n))
        if self.n == 0:
            raise StopIteration
        self.n -= 1
        return self.n


class NotAnIterator:
    def __iter__(self):
        return [1, 2]


def test_a_loop_over_a_user_object_takes_one_item_at_a_time():
    def loop(x, items, log):
        bag, out = Bag(items, log), x
        for v in bag:
            log.append(("body", v))
            if v == 1:
                bag.items.append(10)   # the generator reads the list live
            out = out + v
        return out

    def countdown(x, n, log):
        out = x
        for v in Countdown(n, log):
            log.append(("body", v))
            out = out * (v + 1)
        return out, sum(Countdown(2, log)), list(Countdown(1, log))

    def crossing_a_break(x, log):
        it, out = Countdown(3, log), x
        for v in it:
            out = out + v
            if v == 1:
                pdyn.graph_break()
                log.append(("left", it.n))
        return out

    def not_an_iterator(x):
        try:
            for v in NotAnIterator():
                x = x + v
        except TypeError as e:
            return x, str(e)
        return x

    x = torch.ones(2)
    check_calls(loop, (x, [1, 2], []), (x, [3], []))
    check_calls(countdown, (x, 3, []), (x, 3, []))
    check_calls(crossing_a_break, (x, []), (x, []))
    check_calls(not_an_iterator, (x,), (x,))

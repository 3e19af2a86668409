"""`del obj.name` (DELETE_ATTR) and `delattr` on objects made in the trace, on inputs (the deletion
replayed after the graph) and on modules; `del d[k]` on dicts made in the trace and on inputs."""

from __future__ import annotations

import copy

import torch
from torch import nn

import pdyn
from tests.helpers import check_calls


class Obj:
    kind = "class"

    def __init__(self, **fields):
        for name, value in fields.items():
            setattr(self, name, value)

    def __eq__(self, other):  # the harness compares the arguments after each call
        return type(other) is Obj and vars(other).keys() == vars(self).keys() and all(
            (a == b).all() if isinstance(a, torch.Tensor) else a == b for a, b in zip(vars(self).values(),
                                                                                    vars(other).values()))


def _no_breaks(opt):
    stats = pdyn.stats(opt)
    assert stats["graph_breaks"] == 0 and stats["eager_fallbacks"] == 0, stats


def _captured(fn, *calls, compiles):
    """check_calls, no break or fallback, then `fullgraph=True` captures the first call whole."""
    _no_breaks(check_calls(fn, *calls, compiles=compiles))
    args = copy.deepcopy(calls[0])
    pdyn.optimize(fn, backend="eager", fullgraph=True)(*args)


def test_del_attr_of_an_object_made_in_the_trace():
    def f(x):
        o = Obj(a=x, b=2)
        o.kind = "mine"
        del o.a
        del o.kind  # the class attribute shows again
        return x * o.b, hasattr(o, "a"), o.kind, getattr(o, "a", None)

    _captured(f, (torch.randn(3),), (torch.randn(5),), compiles=1)


def test_del_attr_of_an_input_is_replayed_after_the_graph():
    def f(x, o):
        y = x + o.w
        del o.w
        missing = not hasattr(o, "w")
        o.tmp = y
        del o.tmp
        return y * 2, missing, getattr(o, "w", None), o.kind

    calls = [(torch.randn(3), Obj(w=torch.randn(3))), (torch.randn(4), Obj(w=torch.randn(4)))]
    _captured(f, *calls, compiles=1)


def test_del_missing_attr_raises_attribute_error_like_eager():
    def f(x, o):
        try:
            del o.nothing
        except AttributeError:
            return x + 1
        return x

    def g(x):
        o = Obj(a=1)
        del o.a
        del o.a
        return x

    check_calls(f, (torch.randn(2), Obj(a=1)), (torch.randn(3), Obj(a=2)))
    check_calls(g, (torch.randn(2),))


def test_delattr_builtin_on_an_input_and_class_attribute_shows_after():
    def f(x, o):
        delattr(o, "kind")
        return x * 2, o.kind

    check_calls(f, (torch.randn(2), Obj(kind="inst")), (torch.randn(3), Obj(kind="inst2")), compiles=1)


class Cache(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.note = "keep"

    def forward(self, x):
        self.cache = self.lin(x)
        y = self.cache * 2
        del self.cache
        return y, hasattr(self, "cache"), self.note


def test_del_module_attribute_set_in_forward():
    m = Cache()
    opt = pdyn.optimize(m, backend="eager")
    eager = Cache()
    eager.load_state_dict(m.state_dict())
    for n in (2, 3, 5):
        x = torch.randn(n, 4)
        got, want = opt(x), eager(x)
        torch.testing.assert_close(got[0], want[0])
        assert got[1:] == want[1:]
        assert not hasattr(m, "cache")
    _no_breaks(opt.forward)
    assert pdyn.stats(opt.forward)["compiles"] == 1


def test_del_module_attribute_that_existed_before_the_call():
    class M(nn.Module):
        def forward(self, x):
            y = x * self.scale
            del self.scale
            return y

    m = M()
    m.scale = 3.0
    opt = pdyn.optimize(m, backend="eager")
    torch.testing.assert_close(opt(torch.ones(2)), torch.full((2,), 3.0))
    assert not hasattr(m, "scale")
    m.scale = 4.0
    torch.testing.assert_close(opt(torch.ones(2)), torch.full((2,), 4.0))
    assert not hasattr(m, "scale")


def test_del_dict_items_made_in_the_trace_and_of_inputs():
    def f(x, d):
        local = {"a": x, "b": x * 2, "c": 3}
        del local["a"]
        del d["drop"]
        return local, x + d["keep"]

    calls = [(torch.randn(2), {"drop": 2, "keep": 2.0}), (torch.randn(3), {"drop": 7, "keep": 2.0})]
    _captured(f, *calls, compiles=1)

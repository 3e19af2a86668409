"""Forward hooks and pre-hooks registered `with_kwargs=True` are traced as nn.Module's `_call_impl`
runs them: a pre-hook gets (module, args, kwargs) and may return new (args, kwargs); a forward hook
gets (module, args, kwargs, output). Against eager, with exact graphs, breaks and compiles."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import pdyn
from tests.helpers import CountingBackend, assert_same


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, scale=1.0):
        return self.lin(x) * scale


def double_scale(module, args, kwargs):
    return args, {**kwargs, "scale": kwargs.get("scale", 1.0) * 2}


def add_input(module, args, kwargs, out):
    return out + args[0] * kwargs.get("scale", 1.0)


def counts():
    stats = pdyn.stats()
    return stats["graph_breaks"], stats["compiles"], stats["eager_fallbacks"]


def run_model(register, *calls, graphs, compiles):
    torch.manual_seed(0)
    model = Scaled()
    register(model)
    outer = nn.Sequential(model)   # the hooked module is a submodule: its hooks run inside the graph
    pdyn.reset()
    backend = CountingBackend()

    def f(x, **kwargs):
        return outer[0](x, **kwargs).relu()

    opt = pdyn.optimize(f, backend=backend)
    for x, kwargs in calls:
        assert_same(opt(x, **kwargs), f(x, **kwargs))
    ops = [[n.name.rstrip("_0123456789") for n in g.graph.nodes if n.op not in ("placeholder", "output")]
           for g in backend.graphs]
    assert ops == graphs
    assert counts() == (0, compiles, 0), pdyn.stats()


def test_a_pre_hook_with_kwargs_changes_the_keywords():
    run_model(lambda m: m.register_forward_pre_hook(double_scale, with_kwargs=True),
              (torch.ones(2, 3), {"scale": 3.0}), (torch.ones(4, 3), {"scale": 3.0}),
              graphs=[["linear", "mul", "relu"]], compiles=1)


def test_a_forward_hook_with_kwargs_sees_the_keywords_and_the_output():
    run_model(lambda m: m.register_forward_hook(add_input, with_kwargs=True),
              (torch.ones(2, 3), {"scale": 2.0}), graphs=[["linear", "mul", "mul", "add", "relu"]], compiles=1)


def test_hooks_of_both_kinds_in_registration_order():
    def register(m):
        m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
        m.register_forward_pre_hook(double_scale, with_kwargs=True)
        m.register_forward_hook(add_input, with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: out - 1)

    run_model(register, (torch.ones(2, 3), {}), graphs=[["add", "linear", "mul", "mul", "add", "sub", "relu"]],
              compiles=1)


def test_a_pre_hook_with_kwargs_returning_something_else_raises_eagers_error():
    model = Scaled()
    model.register_forward_pre_hook(lambda m, args, kwargs: 5, with_kwargs=True)

    def f(x):
        return model(x)

    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple") as eager:
        f(torch.ones(2, 3))
    with pytest.raises(RuntimeError) as compiled:
        pdyn.optimize(f, backend="eager")(torch.ones(2, 3))
    assert str(compiled.value) == str(eager.value)

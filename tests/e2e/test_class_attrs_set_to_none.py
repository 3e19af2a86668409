"""A class attribute whose value is None is found, not taken for absent (nn.Module's
`_compiled_call_impl`, which a module's bound `__call__` reads when it crosses a graph break, as
transformers' generate() keeps `model_forward = model.__call__`); `nn.Module.__call__` called as a
function runs the module's call. Each case against eager, with exact graphs, breaks and compiles."""

from __future__ import annotations

from collections import namedtuple

import torch

from tests.e2e.test_break_in_blocks import run


class Plain:
    marker = None

    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return type(other) is Plain and other.k == self.k


class Pair(namedtuple("Pair", "a b")):
    extra = None


class Net(torch.nn.Module):
    scale = None   # a class attribute set to None, read through the instance

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        return y if self.scale is None else y * self.scale


def test_a_user_objects_class_attribute_set_to_none():
    def f(obj, x):
        return x * obj.k, obj.marker

    run(f, (Plain(2), torch.ones(2)), (Plain(3), torch.ones(3)), graphs=[["mul"]], breaks=0, compiles=1)


def test_a_namedtuple_subclass_class_attribute_set_to_none():
    def f(p, x):
        return x + p.a, p.extra

    run(f, (Pair(1, 2), torch.ones(2)), graphs=[["add"]], breaks=0, compiles=1)


def test_a_modules_bound_call_crossing_a_break_runs_the_module():
    net = Net()

    def f(x):
        forward = net.__call__   # nn.Module.__call__ reads self._compiled_call_impl (None on the class)
        y = x + 1
        print("break")
        return forward(y) * 2

    run(f, (torch.ones(2, 3),), (torch.ones(4, 3),), graphs=[["add"], ["linear", "mul"]], breaks=1, compiles=2)


def test_module_call_as_a_function_and_a_class_attribute_of_a_module():
    net = Net()

    def f(x):
        return torch.nn.Module.__call__(net, x) - net(x), net.scale

    run(f, (torch.ones(2, 3),), graphs=[["linear", "linear", "sub"]], breaks=0, compiles=1)

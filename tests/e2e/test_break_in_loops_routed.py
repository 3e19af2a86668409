"""A frame whose callee breaks inside a loop, with nothing captured before the break, runs without a
graph, its calls routed through pdyn (pdyn/trace/breaks/loops.py). The routed code must be eager's
on every call form and after any change between calls: each case compares results, exceptions and
the modules' state with eager over several calls, and asserts which code objects compiled."""

from __future__ import annotations

import copy

import pytest
import torch

import pdyn
from tests.break_counts import by_code
from tests.helpers import assert_same, check_calls

pytestmark = pytest.mark.filterwarnings("error:pdyn")


class Breaks(torch.nn.Module):
    def __init__(self, scale: float = 2.0):
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(0.5, 1.5, 4) * scale)   # the same in eager's copy
        self.scale = scale

    def forward(self, x, shift=0.0):
        x = x * self.w
        print("", end="")
        return x * self.scale + shift


class Plain(torch.nn.Module):
    def forward(self, x, shift=0.0):
        return x - 1 + shift


class Stack(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x, shift=0.5)   # a keyword argument
        return x


def compiles():
    return {name: c["compiles"] for name, c in by_code().items()}


def compare(model, calls, change=None):
    """Each call optimized and eager on copies; `change(model)` applied to both between calls."""
    pdyn.reset()
    eager = copy.deepcopy(model)
    optimized = pdyn.optimize(model)
    for i, x in enumerate(calls):
        assert_same(optimized(x), eager(x), f"call {i}")
        assert_same(model.state_dict(), eager.state_dict(), f"state after call {i}")
        if change is not None:
            change(model, i)
            change(eager, i)
    return compiles()


def test_the_layers_may_change_between_calls():
    """Layers replaced by another class, appended and removed: the loop is eager's, each call's."""
    def change(model, i):
        if i == 0:
            model.layers[1] = Plain()
        elif i == 1:
            model.layers.append(Breaks(3.0))
        elif i == 2:
            del model.layers[0]
    torch.manual_seed(0)
    counts = compare(Stack([Breaks(), Breaks(), Breaks()]), [torch.randn(4) for _ in range(4)], change)
    assert counts["Stack.forward"] == 0, counts


def test_hooks_and_a_patched_forward_added_later_are_honoured():
    def change(model, i):
        if i == 0:
            model.layers[0].register_forward_hook(lambda m, args, out: out * 10)
        elif i == 1:
            layer = model.layers[2]
            layer.forward = lambda x, shift=0.0: x + 100 + shift
    torch.manual_seed(1)
    compare(Stack([Breaks(), Breaks(), Breaks()]), [torch.randn(4) for _ in range(3)], change)


class MethodCalls(torch.nn.Module):
    """`self.block(x)` (a method-form load) and `step(*args)` (a call with a star) in loops."""

    def __init__(self):
        super().__init__()
        self.block = Breaks()

    def forward(self, x):
        for _ in range(3):
            x = self.block(x)
        for step in (self.block, self.block):
            x = step(*(x,))
        return x


def test_method_form_and_star_calls_are_routed():
    torch.manual_seed(2)
    counts = compare(MethodCalls(), [torch.randn(4), torch.randn(4)])
    # Breaks.forward: the first input needs no grad, the later ones do (two entries)
    assert counts == {"MethodCalls.forward": 0, "Breaks.forward": 2, "Breaks.forward.<resume 1>": 1}, counts


class Scaler:
    """A user object whose bound method breaks."""

    def __init__(self, k: float):
        self.k = k

    def __eq__(self, other):
        return type(other) is Scaler and other.k == self.k

    def apply(self, x):
        x = x * self.k
        print("", end="")
        return x + self.k


def test_bound_methods_of_user_objects_in_a_loop():
    def f(x, scalers):
        for s in scalers:
            x = s.apply(x)
        return x
    pdyn.reset()
    check_calls(f, (torch.randn(3), [Scaler(2.0), Scaler(2.0)]), (torch.randn(3), [Scaler(2.0)] * 5))
    assert compiles()["test_bound_methods_of_user_objects_in_a_loop.<locals>.f"] == 0


class Fails(Breaks):
    def forward(self, x, shift=0.0):
        if self.scale < 0:
            raise ValueError(f"negative scale {self.scale}")
        return super().forward(x, shift)


def test_an_exception_in_a_layer_is_eagers():
    model = Stack([Fails(), Fails(-1.0), Fails()])
    pdyn.reset()
    optimized, x = pdyn.optimize(copy.deepcopy(model)), torch.randn(4)
    for _ in range(2):
        with pytest.raises(ValueError, match="negative scale -1.0"):
            optimized(x)
    with pytest.raises(ValueError, match="negative scale -1.0"):
        model(x)


class Nested(torch.nn.Module):
    """A layer that is itself a loop over breaking sublayers."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.ModuleList([Breaks(), Breaks()])

    def forward(self, x, shift=0.0):
        for sub in self.inner:
            x = sub(x)
        return x + shift


def test_nested_loops_of_breaking_layers():
    torch.manual_seed(3)
    counts = compare(Stack([Nested(), Nested(), Nested()]), [torch.randn(4), torch.randn(4)])
    assert counts == {"Stack.forward": 0, "Nested.forward": 0, "Breaks.forward": 2,
                      "Breaks.forward.<resume 1>": 1}, counts


def test_grad_flows_through_routed_layers():
    torch.manual_seed(4)
    model = Stack([Breaks(), Breaks()])
    eager = copy.deepcopy(model)
    pdyn.reset()
    optimized = pdyn.optimize(model)
    x = torch.randn(4)
    optimized(x).sum().backward()
    eager(x).sum().backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        assert_same(p.grad, q.grad, name)


def test_a_loop_with_work_before_the_call_keeps_its_graph():
    """Tensor work before the breaking call is captured: the frame compiles as before."""
    def f(x, layers):
        for layer in layers:
            x = x * 2
            x = layer(x)
        return x
    pdyn.reset()
    torch.manual_seed(5)
    check_calls(f, (torch.randn(4), [Breaks(), Breaks()]))
    assert compiles()["test_a_loop_with_work_before_the_call_keeps_its_graph.<locals>.f"] == 1


class Other(Breaks):
    def forward(self, x, shift=0.0):
        x = x + self.w
        print("", end="")
        return x - shift


class TwoCalls(torch.nn.Module):
    """Two breaking modules per iteration, a module after the loop."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.ModuleList([Breaks(), Breaks()])
        self.b = torch.nn.ModuleList([Other(), Other()])
        self.head = Plain()

    def forward(self, x):
        for a, b in zip(self.a, self.b):
            x = a(x)
            x = b(x)
        return self.head(x)


def test_every_module_call_in_the_loop_is_routed_and_the_head_runs_as_it_is():
    torch.manual_seed(6)
    with torch.no_grad():
        counts = compare(TwoCalls(), [torch.randn(4), torch.randn(4)])
    assert counts == {"TwoCalls.forward": 0, "Breaks.forward": 1, "Breaks.forward.<resume 1>": 1,
                      "Other.forward": 1, "Other.forward.<resume 1>": 1}, counts

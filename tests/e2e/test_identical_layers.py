"""Identical layers share one compile: a break inside a layer's `forward` compiles its frame once
per layer structure (the module is guarded by its class and what the trace read of it, its
parameters graph inputs), and the caller, whose break falls inside the loop over the layers with
nothing captured before it, runs without a graph, its calls still through pdyn (no compile per
loop position or for the loop's end). Each case is compared with eager (results and the modules
after the calls) and asserts exact compile counts per code object; layers that differ in structure
(an attribute value, a hook, a parameter shape, the training flag, one module twice) never share an
entry they must not."""

from __future__ import annotations

import copy

import pytest
import torch

import pdyn
from tests.break_counts import by_code
from tests.helpers import assert_same

pytestmark = pytest.mark.filterwarnings("error:pdyn")


class Layer(torch.nn.Module):
    def __init__(self, width: int = 8, scale: float = 0.5):
        super().__init__()
        self.lin = torch.nn.Linear(width, width)
        self.scale = scale

    def forward(self, x):
        x = self.lin(x) * self.scale
        print("", end="")   # a graph break inside every layer
        return torch.relu(x) + x


class Stack(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def run(model, *calls, grad=False):
    """Each call optimized and eager on a copy of the model: results and the models' state equal."""
    pdyn.reset()
    eager = copy.deepcopy(model)
    optimized = pdyn.optimize(model)
    for x in calls:
        with torch.set_grad_enabled(grad):
            assert_same(optimized(x), eager(x))
    assert_same(model.state_dict(), eager.state_dict(), "state after the calls")
    return {name: c["compiles"] for name, c in by_code().items()}


# without grad: the layer's frame and its resume function, once each, however many layers; the
# stack's frame runs without a graph (0 compiles: torch.compile makes 2 graphs here)
NO_GRAD = {"Stack.forward": 0, "Layer.forward": 1, "Layer.forward.<resume 1>": 1}


def ran_without_graph(name, calls):
    """`name` compiled nothing, broke once, and ran each call without a graph."""
    c = by_code()[name]
    assert (c["compiles"], c["breaks"], c["eager"], c["graphs"]) == (0, 1, 0, []), c
    assert pdyn.stats()["frames_without_graph"] == calls


@pytest.mark.parametrize("n", [2, 12, 24])
def test_a_stack_compiles_the_same_for_any_depth(n):
    torch.manual_seed(n)
    x = torch.randn(3, 8)
    assert run(Stack([Layer() for _ in range(n)]), x, x + 1, x * 2) == NO_GRAD
    ran_without_graph("Stack.forward", 3)


@pytest.mark.parametrize("n", [2, 12, 24])
def test_with_grad_the_first_layer_input_differs_once(n):
    """The first layer's input needs no grad, the others' does: two entries, not one per layer
    (3 compiles in all, as torch.compile's 3 graphs)."""
    counts = run(Stack([Layer() for _ in range(n)]), torch.randn(3, 8), grad=True)
    assert counts == {**NO_GRAD, "Layer.forward": 2}


@pytest.mark.parametrize("n", [2, 24])
@pytest.mark.parametrize("grad", [False, True])
def test_sequential_compiles_the_same_for_any_depth(n, grad):
    counts = run(torch.nn.Sequential(*[Layer() for _ in range(n)]), torch.randn(3, 8), torch.randn(3, 8), grad=grad)
    assert counts == {"Sequential.forward": 0, "Layer.forward": 1 + grad, "Layer.forward.<resume 1>": 1}
    ran_without_graph("Sequential.forward", 2)


class ListStack(torch.nn.Module):
    """Layers in a plain list (not registered), walked by a while loop."""

    def __init__(self, layers):
        super().__init__()
        self.plain = layers

    def forward(self, x):
        i = 0
        while i < len(self.plain):
            x = self.plain[i](x)
            i += 1
        return x


def test_a_plain_list_in_a_while_loop_compiles_the_same_for_any_depth():
    for n in (2, 12):
        assert run(ListStack([Layer() for _ in range(n)]), torch.randn(3, 8)) == \
            {"ListStack.forward": 0, "Layer.forward": 1, "Layer.forward.<resume 1>": 1}


def breaking(w):
    def step(x):
        x = x * w
        print("", end="")
        return x + w
    return step


def test_functions_made_per_layer_compile_once():
    """A loop over closures (one per layer): each call runs its own cells, one entry serves them all."""
    def apply(x, steps):
        for step in steps:
            x = step(x)
        return x
    pdyn.reset()
    steps = [breaking(torch.full((3,), float(k))) for k in range(6)]
    optimized, x = pdyn.optimize(apply), torch.randn(3)
    assert_same(optimized(x, steps), apply(x, steps))
    assert {name: c["compiles"] for name, c in by_code().items()} == \
        {"test_functions_made_per_layer_compile_once.<locals>.apply": 0, "breaking.<locals>.step": 1,
         "breaking.<locals>.step.<resume 1>": 1}


class Model(torch.nn.Module):
    """Work before the loop (captured: the frame compiles), a stack, a head after it."""

    def __init__(self, n):
        super().__init__()
        self.embed = torch.nn.Linear(4, 8)
        self.layers = torch.nn.ModuleList(Layer() for _ in range(n))
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def test_work_before_the_loop_is_captured_and_the_loop_resume_runs_without_a_graph():
    """The frame compiles (its graph: embed); its resume function, inside the loop with nothing
    captured, runs without a graph; the head after the loop runs as it is (torch.compile: 2 graphs,
    embed and head eager)."""
    for n, grad in ((2, False), (12, False), (12, True)):
        counts = run(Model(n), torch.randn(3, 4), torch.randn(3, 4), grad=grad)
        assert counts == {"Model.forward": 1, "Model.forward.<resume 1>": 0, "Layer.forward": 1,
                          "Layer.forward.<resume 1>": 1}, counts
        ran_without_graph("Model.forward.<resume 1>", 2)


def test_a_different_attribute_value_is_its_own_entry():
    layers = [Layer() for _ in range(6)]
    layers[3].scale = 2.0
    assert run(Stack(layers), torch.randn(3, 8)) == {**NO_GRAD, "Layer.forward": 2}


def test_a_hook_on_one_layer_runs():
    layers = [Layer() for _ in range(6)]
    layers[2].register_forward_hook(lambda m, args, out: out * 3)
    assert run(Stack(layers), torch.randn(3, 8)) == NO_GRAD


class Scaled(torch.nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.w = torch.nn.Parameter(torch.full(shape, 1.5))

    def forward(self, x):
        x = x * self.w
        print("", end="")
        return x + self.w.sum()


def test_a_different_parameter_shape_is_its_own_entry():
    layers = [Scaled((8,)), Scaled((8,)), Scaled((1,)), Scaled((8,))]
    counts = run(Stack(layers), torch.randn(3, 8))
    assert counts["Scaled.forward"] == 2, counts


class TrainingOnly(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        x = self.lin(x)
        if self.training:
            x = x * 2
        print("", end="")
        return x


def test_the_training_flag_is_guarded():
    layers = [TrainingOnly() for _ in range(5)]
    layers[1].eval()
    counts = run(Stack(layers), torch.randn(3, 8))
    assert counts["TrainingOnly.forward"] == 2, counts


class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        x = self.lin(x) * self.calls
        print("", end="")
        return x


def test_one_module_twice_sees_its_own_changes():
    shared = Counting()
    model = Stack([Counting(), shared, shared, Counting()])
    run(model, torch.randn(3, 8), torch.randn(3, 8))
    assert [m.calls for m in model.layers] == [2, 4, 4, 2]


class FirstIsSpecial(Stack):
    def forward(self, x):
        for layer in self.layers:
            if layer is self.layers[0]:
                x = x + 1
            x = layer(x)
        return x


def test_identity_of_a_layer_is_pinned_where_code_compares_it():
    torch.manual_seed(0)
    counts = run(FirstIsSpecial([Layer() for _ in range(4)]), torch.randn(3, 8))
    # the first layer's `x + 1` is captured (the frame compiles); the loop's resume runs without a graph
    assert counts == {"FirstIsSpecial.forward": 1, "FirstIsSpecial.forward.<resume 1>": 0, "Layer.forward": 1,
                      "Layer.forward.<resume 1>": 1}, counts


def test_the_loop_position_is_data_not_baked():
    """Layers that differ only in their weights: every position runs its own layer."""
    layers = [Layer() for _ in range(5)]
    with torch.no_grad():
        for k, layer in enumerate(layers):
            layer.lin.weight.fill_(0.1 * k)
            layer.lin.bias.fill_(k)
    assert run(Stack(layers), torch.ones(2, 8)) == NO_GRAD


class Enumerated(Stack):
    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x) + i   # Python's loop counts: no entry per position
        return x


@pytest.mark.parametrize("n", [4, 12])
def test_an_enumerated_stack_compiles_the_same_for_any_depth(n):
    torch.manual_seed(n)
    counts = run(Enumerated([Layer() for _ in range(n)]), torch.randn(3, 8))
    assert counts == {"Enumerated.forward": 0, "Layer.forward": 1, "Layer.forward.<resume 1>": 1}, counts


class FindsItself(Stack):
    def forward(self, x):
        for layer in self.layers:
            x = layer(x) * (1 + list(self.layers).index(layer))
        return x


def test_a_layer_found_in_its_list_is_found_where_python_finds_it():
    """`.index` decides by identity: the modules stay distinct objects, or the entry does not apply."""
    pdyn.reset()
    model = FindsItself([Layer() for _ in range(3)])
    eager = copy.deepcopy(model)
    optimized, x = pdyn.optimize(model), torch.randn(3, 8)
    with torch.no_grad():
        assert_same(optimized(x), eager(x))
        for m in (model, eager):
            m.layers[2] = m.layers[0]   # now one module twice: index finds the first
        assert_same(optimized(x), eager(x))


def test_explain_lists_the_frame_that_runs_without_a_graph():
    pdyn.reset()
    with torch.no_grad():
        out = pdyn.explain(Stack([Layer() for _ in range(4)]))(torch.randn(3, 8))
    assert (out.compiles, out.graph_count, out.graph_break_count) == (2, 2, 2)
    skipped = out.frames[-1]
    assert skipped.eager and skipped.ops == () and skipped.break_reason.key == "print", out.frames

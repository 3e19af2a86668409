"""An int attribute of an nn.Module (a head count, a head size) is a constant of the model: the
graph takes it as a constant under a guard, as torch.compile does, until the recompile policy sees
it change; from then on it is a size symbol like an int argument."""

from __future__ import annotations

import torch

import pdyn


class Heads(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads, self.head_dim = 4, 8
        self.proj = torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return self.proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2).softmax(-1)


def test_int_attributes_of_a_module_are_constants_in_the_graph():
    torch.manual_seed(0)
    model = Heads().eval()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = pdyn.optimize(model, backend=backend)
    with torch.no_grad():
        for t in (5, 9, 16):
            x = torch.randn(2, t, 32)
            torch.testing.assert_close(compiled(x), model(x))
    assert pdyn.stats(compiled)["compiles"] == 1
    (gm,) = graphs
    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    assert placeholders == ["x", "self_proj_weight", "self_proj_bias"]  # no int inputs
    view = next(n for n in gm.graph.nodes if n.target == "view")
    assert view.args[3:] == (4, 8)
    with torch.no_grad():
        guards = "\n".join(pdyn.explain(model)(torch.randn(2, 5, 32)).guards)
    assert "L['self'].heads == 4" in guards and "L['self'].head_dim == 8" in guards, guards


class Window(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.k = 3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.k + x.sum(0)[: self.k].sum()


def test_an_attribute_that_changes_becomes_a_size_after_one_recompile():
    model = Window()
    compiled = pdyn.optimize(model, backend="eager")
    x = torch.randn(10, 12)
    for k in (3, 3, 5, 7, 9, 2):
        model.k = k
        assert torch.equal(compiled(x), model(x))
    stats = pdyn.stats(compiled)
    assert stats["compiles"] == 2 and stats["graph_breaks"] == 0

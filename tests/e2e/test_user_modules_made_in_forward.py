"""nn.Modules of a user's or library's class constructed inside the compiled function (activation
tables such as transformers' `ACT2FN["silu"]`): their `__init__` is traced, their forward inlined,
compared with eager over calls of changing shapes."""

from __future__ import annotations

import collections

import pytest
import torch
from torch import nn

import pdyn
from tests.break_counts import by_code
from tests.helpers import assert_same, check_calls

MADE: list[float] = []   # what the __init__ of `Scaled` appends to (a side effect on a global)


class Leaky(nn.Module):
    def __init__(self, slope: float = 0.5):
        super().__init__()
        self.slope = slope

    def forward(self, x):
        return torch.where(x > 0, x, x * self.slope)


class Plain(nn.Module):   # no __init__ of its own: nn.Module's
    def forward(self, x):
        return x.sigmoid() * x


class Table(collections.OrderedDict):
    """A class per name, constructed on each lookup (transformers' ClassInstantier)."""

    def __getitem__(self, key):
        content = super().__getitem__(key)
        cls, kwargs = content if isinstance(content, tuple) else (content, {})
        return cls(**kwargs)


ACTS = Table({"leaky": (Leaky, {"slope": 0.1}), "plain": Plain, "gelu": nn.GELU})


class Scaled(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        MADE.append(scale)
        self.scale = scale
        self.act = ACTS["leaky"]       # a submodule made the same way
        self.norm = nn.Identity()      # and one of torch.nn's

    def forward(self, x):
        return self.norm(self.act(x)) * self.scale


def _shapes(*rows: int) -> list[tuple[torch.Tensor]]:
    return [(torch.randn(n, 4),) for n in rows]


def test_activations_from_a_table_are_one_graph_over_shapes():
    def f(x):
        return ACTS["leaky"](x) + ACTS["plain"](x) + ACTS["gelu"](x) + Leaky()(x)

    pdyn.reset()
    check_calls(f, *_shapes(2, 3, 5, 8), compiles=1)
    assert (pdyn.stats()["graphs"], pdyn.stats()["graph_breaks"]) == (1, 0)


def test_init_side_effects_submodules_and_an_escaping_module_match_eager():
    """The __init__'s append to a global runs once per call, as in eager; the module returned is
    a new object per call, made again with its fields and submodules (its __init__ not rerun)."""
    def f(x):
        m = Scaled(2.0)
        return m(x) + 1, m

    pdyn.reset()
    opt = pdyn.optimize(f, backend="eager")
    for (x,) in _shapes(2, 3, 5):
        MADE.clear()
        expected, made = f(x)
        actual, module = opt(x)
        assert MADE == [2.0, 2.0]
        assert_same(actual, expected)
        assert type(module) is Scaled and module is not made and module.scale == 2.0
        assert list(module._modules) == ["act", "norm"] and type(module.act) is Leaky and module.act.slope == 0.1
        assert module.training and not module._parameters and not module._buffers
    assert (pdyn.stats()["compiles"], pdyn.stats()["graph_breaks"]) == (1, 0)


def test_a_module_made_in_forward_lists_its_children_and_stores_attributes_later():
    def f(x):
        MADE.clear()   # a list of another length is another entry (its length is guarded)
        m = Scaled(0.5)
        m.scale = m.scale * 3
        names = [name for name, _ in m.named_children()]
        return m(x), names, m.training

    pdyn.reset()
    check_calls(f, *_shapes(2, 3, 6), compiles=1)
    assert pdyn.stats()["graph_breaks"] == 0


def test_a_parameter_made_in_init_is_a_break_with_eager_values():
    """Eager makes a new leaf requiring grad on each call: the construction runs for real (one
    break), the code before it and the module's call after it are graphs."""
    class WithWeight(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.w = nn.Parameter(torch.randn(n))

        def forward(self, x):
            return x * self.w

    def f(x):
        x = x * 2
        return WithWeight(x.shape[-1])(x) + 1

    pdyn.reset()
    opt = pdyn.optimize(f, backend="eager")
    for (x,) in _shapes(2, 3, 5):
        torch.manual_seed(0)
        expected = f(x)
        torch.manual_seed(0)
        assert_same(opt(x), expected)   # the same weights, and requires_grad as eager
    assert by_code() == {"test_a_parameter_made_in_init_is_a_break_with_eager_values.<locals>.f":
                         {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [("mul",)]},
                         "test_a_parameter_made_in_init_is_a_break_with_eager_values.<locals>.f.<resume 1>":
                         {"compiles": 1, "breaks": 0, "eager": 0, "graphs": [("mul", "add")]}}
    assert [b.key for b in pdyn.explain(f)(torch.randn(2, 4)).break_reasons] == ["module_construction"]


class Printing(nn.Module):
    def __init__(self, scale):
        super().__init__()
        print("made", scale)
        self.scale = scale

    def forward(self, x):
        return x * self.scale


class PrintsInForward(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = x * self.scale
        print("forward")
        return y + self.scale


def test_breaks_inside_init_or_forward_match_eager(capsys):
    def f(x):
        return Printing(3.0)(x + 1) - 1

    def g(x):
        m = PrintsInForward(2.0)
        return m(x - 1), m.scale

    for fn in (f, g):
        check_calls(fn, *_shapes(2, 3, 5))
        out = capsys.readouterr().out.splitlines()
        assert len(out) == 6 and out[0::2] == out[1::2]   # each call prints as eager does


def test_init_errors_and_unmodelled_inits_run_as_eager():
    class Buffered(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", torch.ones(4))

        def forward(self, x):
            return x + self.b

    class Guarded(nn.Module):
        def __setattr__(self, name, value):
            super().__setattr__(name, value)

        def forward(self, x):
            return -x

    def f(x, which):
        x = x * 2
        if which == 0:
            return Leaky(slope=None)(x)   # eager raises TypeError in forward
        if which == 1:
            return Leaky(0.2, 3)(x)       # and here in __init__
        return Buffered()(x) + Guarded()(x)

    x = torch.randn(3, 4)
    check_calls(f, (x, 0), (x, 1), (x, 2))
    assert [b.key for b in pdyn.explain(f)(x, 2).break_reasons] == ["module_construction"] * 2


def test_module_init_wrapped_by_torch_compile_is_still_traced(monkeypatch):
    """torch.compile replaces nn.Module.__init__ with a wrapper that tags each module; a class
    whose __init__ calls it, or inherits it, is still constructed in the trace."""
    init = nn.Module.__init__

    def tagging_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        TAGGED.append(1)

    TAGGED: list[int] = []
    monkeypatch.setattr(nn.Module, "__init__", tagging_init)

    def f(x):
        return Leaky(0.3)(x) + Plain()(x)

    pdyn.reset()
    check_calls(f, *_shapes(2, 3), compiles=1)
    assert pdyn.stats()["graph_breaks"] == 0


@pytest.mark.parametrize("name", ["silu", "gelu", "gelu_new"])
def test_transformers_activation_table(name):
    activations = pytest.importorskip("transformers.activations")

    def f(x):
        return activations.ACT2FN[name](x) * 2

    pdyn.reset()
    check_calls(f, *_shapes(2, 3, 5), compiles=1)
    assert (pdyn.stats()["graphs"], pdyn.stats()["graph_breaks"]) == (1, 0)


class Mixer(nn.Module):
    """A state-space layer in miniature (transformers' Mamba): an activation from the table in
    forward, a recurrence over `range(seq_len)`, a cache slot chosen by `layer_idx`."""

    def __init__(self, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.proj = nn.Linear(4, 4)

    def forward(self, x, cache):
        h = ACTS["leaky"](self.proj(x))
        state = cache[self.layer_idx]
        outs = []
        for t in range(x.shape[1]):
            state = state * 0.5 + h[:, t]
            outs.append(state)
        cache[self.layer_idx] = state
        return torch.stack(outs, 1)


class MixerStack(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.layers = nn.ModuleList(Mixer(i) for i in range(n))

    def forward(self, x):
        cache = [x.new_zeros(x.shape[0], 4) for _ in self.layers]
        for layer in self.layers:
            x = layer(x, cache)
        return x, cache


def test_a_stack_of_layers_making_activations_compiles_per_length_not_per_layer():
    """One graph for the stack; the loop over the length unrolls, so each length is a compile (as
    torch.compile), and the layers' `layer_idx` are constants of that one trace."""
    model = MixerStack(3)

    def f(x):
        return model(x)

    pdyn.reset()
    with torch.no_grad():
        check_calls(f, *[(torch.randn(b, t, 4),) for b, t in ((2, 3), (3, 5), (1, 3), (2, 4))], compiles=3)
    assert (pdyn.stats()["graphs"], pdyn.stats()["graph_breaks"]) == (3, 0)

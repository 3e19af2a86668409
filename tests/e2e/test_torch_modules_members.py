"""End-to-end: nn.Module member methods, hooks, keyword arguments and stock layers under pdyn."""

from __future__ import annotations

import torch
from torch import nn

import pdyn
from tests.helpers import check


class Tree(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        self.head = nn.Linear(2, 1, bias=False)
        self.register_buffer("shift", torch.ones(1))


def test_parameters_and_buffers_of_module_tree():
    class M(Tree):
        def forward(self, x):
            total = sum([p.sum() for p in self.parameters()])
            return self.head(self.body(x)) + total + len(list(self.buffers()))

    check(M(), torch.randn(3, 2))


def test_named_members_give_qualified_names():
    class M(Tree):
        def forward(self, x):
            names = [n for n, _ in self.named_parameters()] + [n for n, _ in self.named_modules()]
            names += [n for n, _ in self.named_buffers()] + [n for n, _ in self.body.named_children()]
            return x * len(names), names

    check(M(), torch.randn(2))


def test_non_recursive_parameters_and_prefix():
    class M(Tree):
        def forward(self, x):
            return len(list(self.parameters(recurse=False))), [n for n, _ in self.head.named_parameters("h")]

    check(M(), torch.randn(2), graphs=0)


def test_children_loop():
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(2, 3)
            self.b = nn.Tanh()
            self.c = nn.Linear(3, 2)

        def forward(self, x):
            for child in self.children():
                x = child(x)
            return x

    check(M(), torch.randn(4, 2))


def test_next_of_parameters_for_dtype():
    class M(Tree):
        def forward(self, x):
            return self.body(x.to(next(self.parameters()).dtype))

    check(M(), torch.arange(4.0, dtype=torch.float64).view(2, 2))


def test_isinstance_dispatch_over_sequential():
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))

        def forward(self, x):
            for m in self.layers:
                x = m(x) * 2 if isinstance(m, nn.Linear) else m(x)
            return x, isinstance(x, torch.Tensor)

    check(M(), torch.randn(2))


def test_forward_with_keyword_arguments():
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x, *, scale=1.0, mask=None):
            y = self.lin(x) * scale
            if mask is not None:
                y = y.masked_fill(mask, 0.0)
            return y

    check(M(), torch.randn(2), scale=2.0, mask=torch.tensor([True, False]))
    check(M(), torch.randn(2))


def test_submodule_attributes_and_shapes():
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(2, 3)

        def forward(self, x):
            return x.new_zeros(self.lin.weight.shape[0]) + self.lin.out_features + self.lin.weight.T.sum()

    check(M(), torch.randn(2))


def test_parameter_list():
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ps = nn.ParameterList([nn.Parameter(torch.randn(2)) for _ in range(2)])

        def forward(self, x):
            for p in self.ps:
                x = x * p
            return x + self.ps[0]

    check(M(), torch.randn(2))


def test_plain_tensor_attribute():
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mask = torch.tensor([True, False])
            self.sizes = [2, 1]

        def forward(self, x):
            a, b = x.split(self.sizes, -1)
            return a.masked_fill(self.mask, 0.0).sum(-1) * b.squeeze(-1)

    check(M(), torch.randn(4, 3))


def test_hook_on_optimized_module_still_runs():
    m = nn.Linear(2, 2)
    m.register_forward_hook(lambda mod, inp, out: out * 0)
    opt = check(m, torch.randn(1, 2))
    assert (opt(torch.randn(1, 2)) == 0).all()


def test_hook_added_after_compile_is_honoured():
    m = nn.Sequential(nn.Linear(2, 2))
    opt = pdyn.optimize(m)
    x = torch.randn(1, 2)
    opt(x)
    m[0].register_forward_hook(lambda mod, inp, out: out * 0)
    assert (opt(x) == 0).all()
    assert pdyn.stats(opt)["compiles"] == 2


def test_backward_hook_on_submodule_runs_its_forward_optimized():
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    m[0].register_full_backward_hook(lambda mod, gin, gout: None)
    check(m, torch.randn(1, 2), graphs=2)  # the hooked Linear's forward, then the rest


def test_stock_layers():
    block = nn.Sequential(nn.ConvTranspose2d(2, 2, 2, stride=2), nn.GroupNorm(1, 2), nn.SiLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2, 3), nn.LogSoftmax(-1))
    check(block, torch.randn(1, 2, 3, 3))


def test_embedding_with_padding_idx():
    check(nn.Embedding(5, 3, padding_idx=0), torch.tensor([[0, 1], [2, 4]]))


def test_gru_cell():
    check(nn.GRUCell(4, 3), torch.randn(2, 4))


def test_backward_hook_added_after_compile_is_honoured():
    m = nn.Sequential(nn.Linear(2, 2))
    opt = pdyn.optimize(m)
    x = torch.randn(1, 2, requires_grad=True)
    opt(x)
    calls = []
    m[0].register_full_backward_hook(lambda mod, grad_in, grad_out: calls.append(len(grad_in)))
    opt(x).sum().backward()
    assert calls == [1]
    # the hooked module is a break inside Sequential's loop with nothing captured before it: from then
    # on Sequential.forward runs without a graph, its call of the module through nn.Module's hooks
    stats = pdyn.stats(opt)
    assert (stats["compiles"], stats["graph_breaks"], stats["frames_without_graph"]) == (1, 1, 1), stats


def test_subclass_calls_super_forward():
    class Base(nn.Linear):
        def forward(self, x):
            return super().forward(x) + 1

    class Derived(Base):
        def forward(self, x):
            return super().forward(x) * 2

    check(Derived(2, 3), torch.randn(4, 2))

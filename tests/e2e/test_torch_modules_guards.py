"""End-to-end: changes to a module after compiling (attributes, submodules, parameters, containers)
are seen on the next call, through a guard that recompiles or through a graph input read afresh."""

from __future__ import annotations

import torch
from torch import nn

import pdyn
from tests.helpers import check


def test_class_attribute_then_instance_attribute():
    class M(nn.Module):
        scale = 2.0

        def forward(self, x):
            return x * self.scale

    m = M()
    opt = pdyn.optimize(m)
    x = torch.ones(1)
    assert opt(x).item() == 2.0
    m.scale = 3.0
    assert opt(x).item() == 3.0
    M.scale = 5.0
    del m.scale
    assert opt(x).item() == 5.0


def test_replaced_parameter_and_removed_bias():
    m = nn.Linear(2, 2)
    opt = pdyn.optimize(m)
    x = torch.randn(1, 2)
    opt(x)
    m.weight = nn.Parameter(torch.zeros(2, 2))
    torch.testing.assert_close(opt(x), m.bias.expand(1, 2))
    m.bias = None
    torch.testing.assert_close(opt(x), torch.zeros(1, 2))


def test_module_dict_and_module_list_growing():
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.d = nn.ModuleDict({"a": nn.Identity()})
            self.l = nn.ModuleList([nn.Identity()])

        def forward(self, x):
            for k in self.d:
                x = self.d[k](x) + 1
            for layer in self.l:
                x = layer(x) * 2
            return x

    m = M()
    opt = pdyn.optimize(m)
    x = torch.zeros(1)
    assert opt(x).item() == 2
    m.d["b"] = nn.Identity()
    m.l.append(nn.Identity())
    assert opt(x).item() == 8


def test_new_parameter_is_listed_after_recompile():
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Parameter(torch.ones(1))

        def forward(self, x):
            return x + sum([p for p in self.parameters()])

    m = M()
    opt = pdyn.optimize(m)
    assert opt(torch.zeros(1)).item() == 1
    m.b = nn.Parameter(torch.ones(1))
    assert opt(torch.zeros(1)).item() == 2
    assert pdyn.stats(opt)["compiles"] == 2


def test_eval_on_one_submodule():
    m = nn.Sequential(nn.Dropout(0.5))
    opt = pdyn.optimize(m)
    x = torch.ones(100)
    opt(x)
    m[0].eval()
    torch.testing.assert_close(opt(x), x)


def test_shared_submodule_and_tied_weights():
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.e = nn.Embedding(4, 2)
            self.h = nn.Linear(2, 4, bias=False)
            self.h.weight = self.e.weight
            self.h2 = self.h

        def forward(self, t):
            names = [n for n, _ in self.named_parameters()]
            return self.h2(self.h(self.e(t)).T[:2].T), names, len(list(self.modules()))

    check(M(), torch.tensor([1, 2]))


def test_module_passed_as_argument():
    check(lambda m, x: (m(x).relu(), m.weight), nn.Linear(2, 3), torch.randn(2))


def test_buffer_reassigned_in_forward():
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("state", torch.zeros(2))

        def forward(self, x):
            self.state = self.state + x
            return self.state * 1

    m, ref = M(), M()
    opt = pdyn.optimize(m)
    for _ in range(3):
        torch.testing.assert_close(opt(torch.ones(2)), ref(torch.ones(2)))
    assert "state" in m._buffers and "state" not in m.__dict__
    torch.testing.assert_close(m.state, ref.state)


def test_rms_norm_and_rotary_embedding():
    class RMS(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.ones(d))
            self.eps = 1e-6

        def forward(self, x):
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w
            d = x.shape[-1]
            freqs = torch.outer(torch.arange(x.shape[1]).float(), 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d)))
            x1, x2 = x[..., ::2], x[..., 1::2]
            return torch.cat([x1 * freqs.cos() - x2 * freqs.sin(), x1 * freqs.sin() + x2 * freqs.cos()], -1)

    check(RMS(4), torch.randn(2, 3, 4))


def test_property_raising_is_raised_like_eager():
    class M(nn.Module):
        @property
        def p(self):
            raise ValueError("nope")

        def forward(self, x):
            return x * self.p

    check(M(), torch.randn(2), graphs=0)


def test_identity_flatten_unflatten():
    check(nn.Identity(), torch.randn(2), graphs=0)
    check(nn.Sequential(nn.Flatten(), nn.Unflatten(1, (2, 3))), torch.randn(2, 6))


def test_layer_errors_raise_like_eager():
    check(nn.Linear(3, 2), torch.randn(2, 4), graphs=0)
    check(nn.Embedding(3, 2), torch.tensor([5]))


def test_new_input_shape_recompiles_module():
    m = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    opt = pdyn.optimize(m)
    for n in (0, 0, 5):  # size 0 is always specialized
        x = torch.randn(n, 3)
        torch.testing.assert_close(opt(x), torch.relu(m[0](x)))
    assert pdyn.stats(opt)["compiles"] == 2


def test_multihead_attention_is_captured_whole():
    m = nn.MultiheadAttention(4, 1, batch_first=True)
    check(lambda x: m(x, x, x, need_weights=False)[0], torch.randn(1, 2, 4), graphs=1)

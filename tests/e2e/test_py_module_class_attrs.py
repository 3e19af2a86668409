"""Methods of the user's nn.Module subclasses are looked up with a ClassAttrGuard, as user
classes' are: replacing one on the class (or shadowing a base's) after compiling recompiles."""

from __future__ import annotations

import torch
from torch import nn

import pdyn


class Helped(nn.Module):
    def helper(self, x):
        return x * 2

    def forward(self, x):
        return self.helper(x) + 1


def test_monkeypatching_a_module_method_recompiles():
    m = Helped()
    opt = pdyn.optimize(m, backend="eager")
    x = torch.randn(3)
    torch.testing.assert_close(opt(x), x * 2 + 1)
    torch.testing.assert_close(opt(torch.randn(4)).shape, torch.Size([4]))
    assert pdyn.stats(opt.forward)["compiles"] == 1
    original = Helped.helper
    try:
        Helped.helper = lambda self, x: x * 3
        torch.testing.assert_close(opt(x), x * 3 + 1)
        assert pdyn.stats(opt.forward)["compiles"] == 2
        Helped.helper = original
        torch.testing.assert_close(opt(x), x * 2 + 1)  # the first entry applies again
        assert pdyn.stats(opt.forward)["compiles"] == 2
    finally:
        Helped.helper = original


def test_a_method_set_on_a_base_class_after_compiling_recompiles():
    class Base(nn.Module):
        def scale(self):
            return 2.0

    class Child(Base):
        def forward(self, x):
            return x * self.scale()

    m = Child()
    opt = pdyn.optimize(m, backend="eager")
    x = torch.randn(3)
    torch.testing.assert_close(opt(x), x * 2)
    Child.scale = lambda self: 5.0  # now found first in Child
    torch.testing.assert_close(opt(x), x * 5)
    assert pdyn.stats(opt.forward)["compiles"] == 2

"""Custom and packet ops: `torch.ops.ns.op(...)` on the packet (aten's and a library's namespace),
a `torch.library.custom_op` object called directly, and a custom op's registered fake kernel as its
shape rule: one node, no break, one compile across sizes where the kernel's sizes are sums and
products of the inputs' (a kernel that assumes sizes equal specializes, never guesses)."""

from __future__ import annotations

import pytest
import torch

import pdyn
from tests.break_counts import by_code
from tests.helpers import check_calls

pytestmark = pytest.mark.filterwarnings("error:pdyn")


@torch.library.custom_op("pdyn_test::grow", mutates_args=())
def grow(x: torch.Tensor, n: int) -> torch.Tensor:
    return torch.cat([x, x.new_zeros(n, x.shape[1])])


@grow.register_fake
def _(x, n):
    return x.new_empty(x.shape[0] + n, x.shape[1])


@torch.library.custom_op("pdyn_test::plus", mutates_args=())
def plus(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y


@plus.register_fake
def _(x, y):
    return x + y   # a broadcast: torch assumes the sizes equal


def graphs_of(name):
    return by_code()[name]["graphs"]


def on_packet(x):
    return torch.ops.aten.sin(x) + torch.ops.aten.add(x, 2)


def test_an_aten_packet_is_one_node():
    pdyn.reset()
    check_calls(on_packet, (torch.randn(3),), (torch.randn(3),), compiles=1)
    assert graphs_of("on_packet") == [("sin.default", "add.Tensor", "add")]


def custom_packet(x, n):
    return torch.ops.pdyn_test.grow(x, n).sum(0)


def custom_object(x, n):
    return grow(x, n).sum(0)


@pytest.mark.parametrize("fn", [custom_packet, custom_object])
def test_a_custom_op_is_one_node_and_its_fake_kernel_its_shape_rule(fn):
    pdyn.reset()
    calls = [(torch.randn(3, 2), 2), (torch.randn(5, 2), 3), (torch.randn(6, 2), 7)]
    check_calls(fn, *calls, compiles=1)
    assert graphs_of(fn.__name__) == [("grow.default", "sum")]


def broadcast_kernel(x, y):
    return plus(x, y) * 2


def test_a_fake_kernel_that_assumes_sizes_equal_specializes():
    pdyn.reset()
    calls = [(torch.randn(3), torch.randn(3)), (torch.randn(4), torch.randn(4)), (torch.randn(1), torch.randn(5)),
             (torch.randn(5), torch.randn(1))]
    check_calls(broadcast_kernel, *calls)  # eager's results: the rule's assumption was not taken as true
    assert by_code()["broadcast_kernel"]["compiles"] >= 2  # the sizes specialized (one entry per kind)

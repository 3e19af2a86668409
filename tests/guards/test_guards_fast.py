"""The fast guard check (pdyn/guards/codegen.py, tensor_batch.py): a model's weights checked in one C
call, every other guard as before; it accepts and rejects exactly as the full Python check and
returns the full check's sentence, for each tensor property a call can change."""

from __future__ import annotations

import logging
from typing import Any, Callable

import pytest
import torch

import pdyn
from pdyn.base import logs
from pdyn.base.config import Config
from pdyn.guards import tensor_batch
from pdyn.guards.codegen import GuardCode, build
from pdyn.guards.guards import ClassAttrGuard, GuardSet
from pdyn.guards.tensor_guards import TensorGuard
from pdyn.sources import AttrSource, LocalSource, ModuleMemberSource

M = LocalSource("m")


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.register_buffer("scale", torch.full((3,), 2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * self.scale


def guard_of(src: Any, t: torch.Tensor, dynamic: tuple[int, ...] = (), strides: bool = True) -> TensorGuard:
    sizes = tuple(None if i in dynamic else s for i, s in enumerate(t.shape))
    stride = tuple(None if i in dynamic else s for i, s in enumerate(t.stride())) if strides else None
    return TensorGuard(src, type(t), t.dtype, t.device, t.requires_grad, sizes, stride)


def weights_code(net: Net, dynamic_scale: tuple[int, ...] = ()) -> GuardCode:
    """The guards of `net`'s weight, bias and buffer, read through its module tables."""
    fc = ModuleMemberSource(M, "fc", "_modules")
    guards = GuardSet()
    guards.add(guard_of(ModuleMemberSource(fc, "weight", "_parameters"), net.fc.weight))
    guards.add(guard_of(ModuleMemberSource(fc, "bias", "_parameters"), net.fc.bias))
    guards.add(guard_of(ModuleMemberSource(M, "scale", "_buffers"), net.scale, dynamic_scale))
    return build(guards, "weights")


def agree(code: GuardCode, L: dict[str, Any]) -> str | None:
    """The fast check's answer, asserted equal to the full check's (twice: the first call may be the
    one that builds the C check)."""
    expected = code.full_check(L, {})
    assert code.check(L, {}) == expected
    assert code.check(L, {}) == expected
    return expected


def test_weights_are_batched_and_checked_natively_once_a_call_passes():
    net = Net()
    code = weights_code(net)
    assert code.tensors is not None and len(code.tensors.guards) == 3
    assert "if not _tensors(" in code.fast_source and "_tensors(" not in code.source
    assert agree(code, {"m": net}) is None
    assert code.tensors.native is (tensor_batch._CTensorGuards is not None)


MUTATIONS: dict[str, tuple[Callable[[Net], None], str | None]] = {
    "dtype": (lambda n: setattr(n.fc.weight, "data", n.fc.weight.data.double()),
              "L['m'].fc.weight is a float32 cpu tensor requiring grad"),
    "device": (lambda n: setattr(n.fc, "bias", torch.nn.Parameter(torch.ones(3, device="meta"))),
               "L['m'].fc.bias is a float32 cpu tensor requiring grad"),
    "shape by .data": (lambda n: setattr(n.fc.weight, "data", torch.zeros(3, 5)),
                       "L['m'].fc.weight.size() == (3, 4)"),
    "stride": (lambda n: setattr(n.fc.weight, "data", torch.zeros(4, 3).t()),
               "L['m'].fc.weight.stride() == (4, 1)"),
    "requires_grad": (lambda n: n.fc.bias.requires_grad_(False),
                      "L['m'].fc.bias is a float32 cpu tensor requiring grad"),
    "parameter replaced, same metadata": (lambda n: setattr(n.fc, "bias", torch.nn.Parameter(torch.ones(3))), None),
    "parameter replaced by a plain tensor": (lambda n: n.fc._parameters.__setitem__("bias", torch.ones(3)),
                                             "type(L['m'].fc.bias) is torch.nn.parameter.Parameter"),
    "buffer reassigned, other shape": (lambda n: setattr(n, "scale", torch.ones(4)), "L['m'].scale.size() == (3,)"),
    "buffer reassigned, same metadata": (lambda n: setattr(n, "scale", torch.ones(3)), None),
    "buffer made a subclass": (lambda n: setattr(n, "scale", torch.ones(3).as_subclass(Sub)),
                               "type(L['m'].scale) is torch.Tensor"),
    "buffer removed": (lambda n: n._buffers.pop("scale"), "a guard raised KeyError: 'scale'"),
    "tied weights": (lambda n: setattr(n.fc, "bias", n.fc.bias), None),
}


class Sub(torch.Tensor):
    pass


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_each_change_is_rejected_exactly_when_the_python_check_rejects(name):
    net = Net()
    code = weights_code(net)
    assert agree(code, {"m": net}) is None  # the C check is built from this call
    change, sentence = MUTATIONS[name]
    change(net)
    assert agree(code, {"m": net}) == sentence


def test_a_dynamic_dim_accepts_any_size_and_a_static_one_does_not():
    net = Net()
    code = weights_code(net, dynamic_scale=(0,))
    assert agree(code, {"m": net}) is None
    net.scale = torch.ones(7)
    assert agree(code, {"m": net}) is None
    net.scale = torch.ones(7, 1)
    assert agree(code, {"m": net}) == "L['m'].scale.dim() == 1"
    net.scale = torch.ones(3)
    net.fc.bias.data = torch.ones(7)
    assert agree(code, {"m": net}) == "L['m'].fc.bias.size() == (3,)"


def test_the_same_tensor_under_two_sources_is_checked_once_and_untying_is_seen():
    net = Net()
    net.fc.extra = net.fc.weight  # tied: one tensor read through two sources
    guards = GuardSet()
    fc = ModuleMemberSource(M, "fc", "_modules")
    guards.add(guard_of(ModuleMemberSource(fc, "weight", "_parameters"), net.fc.weight))
    guards.add(guard_of(ModuleMemberSource(fc, "extra", "_parameters"), net.fc.extra))
    code = build(guards, "tied")
    assert agree(code, {"m": net}) is None
    assert code.tensors.native is (tensor_batch._CTensorGuards is not None)
    net.fc.extra = torch.nn.Parameter(torch.zeros(3, 4))  # untied, same metadata: still accepted
    assert agree(code, {"m": net}) is None
    net.fc.extra = torch.nn.Parameter(torch.zeros(3, 4, dtype=torch.float64))
    assert agree(code, {"m": net}) == "L['m'].fc.extra is a float32 cpu tensor requiring grad"


def test_a_c_check_stricter_than_python_falls_back_to_the_full_check():
    """Built outside inference mode, the C check rejects the same weights inside it (dispatch keys
    differ); the full check accepts them, and so does the fast check."""
    net = Net()
    code = weights_code(net)
    assert agree(code, {"m": net}) is None
    native = tensor_batch._CTensorGuards is not None
    with torch.inference_mode():
        assert code.check({"m": net}, {}) is None  # the C check built outside rejects: the full check accepts
        assert code.tensors.stricter == native and not code.tensors.native
        assert agree(code, {"m": net}) is None     # built again, inside
        assert code.tensors.native is native and code.tensors.stricter == native
    for _ in range(3):  # out and in again: twice rebuilt, then the Python conditions serve
        assert agree(code, {"m": net}) is None
        with torch.inference_mode():
            assert agree(code, {"m": net}) is None
    assert code.tensors.stricter == (3 if native else 0)
    if native:
        assert code.tensors.scope[code.tensors.name] == code.tensors.python_check


def test_frame_arguments_and_subclasses_stay_inline():
    x, sub = torch.ones(2), torch.ones(2).as_subclass(Sub)
    guards = GuardSet()
    guards.add(guard_of(LocalSource("x"), x))
    guards.add(guard_of(AttrSource(M, "sub"), sub))
    code = build(guards, "inline")
    assert code.tensors is None and code.check is code.full_check


def test_an_object_without_the_attribute_is_rejected_by_both():
    code = weights_code(Net())
    assert agree(code, {"m": object()}) == "a guard raised AttributeError: 'object' object has no attribute '_modules'"


@pytest.fixture
def recompiles_log():
    logs.apply(Config(logs=frozenset(["recompiles"])))
    yield
    logs.apply(pdyn.config)


def test_a_data_swap_recompiles_and_the_log_names_the_weight(recompiles_log, caplog):
    caplog.set_level(logging.DEBUG, logger="pdyn")
    net = Net()
    f = pdyn.optimize(net)
    x = torch.randn(2, 4)
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(f(x), net(x))
        net.fc.weight.data = torch.randn(5, 4)  # the same Parameter objects, new shapes
        net.fc.bias.data = torch.randn(5)
        net.scale = torch.full((5,), 3.0)
        torch.testing.assert_close(f(x), net(x))
        torch.testing.assert_close(f(x), net(x))
    assert pdyn.stats(f)["compiles"] == 2 and pdyn.stats(f)["recompiles"] == 1
    (line,) = [r.getMessage() for r in caplog.records if r.name == "pdyn.recompiles"]
    assert "fc.weight.size() == (3, 4)" in line


def test_a_class_attribute_added_after_building_is_seen_through_the_hoisted_class_dict():
    class Base:
        pass

    class Leaf(Base):
        pass

    guards = GuardSet()
    guards.add(ClassAttrGuard(None, cls=Leaf, name="scale", owner=None))
    code = build(guards, "class")
    assert "_Leaf_dict" in code.source and "__dict__" not in code.source.split("def check")[1]
    assert code.check({}, {}) is None
    Base.scale = 2.0
    assert code.check({}, {}).endswith("<locals>.Leaf.scale is no class's (as traced)")


def test_a_metaclass_with_its_own_dict_attribute_is_read_afresh():
    class Meta(type):
        @property
        def __dict__(cls):  # noqa: PLE0236 - a metaclass that answers `__dict__` itself
            return {"scale": 1}

    class Odd(metaclass=Meta):
        pass

    guards = GuardSet()
    guards.add(ClassAttrGuard(None, cls=Odd, name="scale", owner=None))
    code = build(guards, "meta")
    assert "_Odd.__dict__" in code.source
    assert code.check({}, {}).endswith("<locals>.Odd.scale is no class's (as traced)")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_nested_tensor_in_a_weight_is_rejected_before_the_c_check_sees_it():
    """torch's C check aborts the process on a nested tensor's strides: the fast check screens it."""
    net = Net()
    code = weights_code(net)
    assert agree(code, {"m": net}) is None
    net.scale = torch.nested.nested_tensor([torch.ones(3), torch.ones(3)])
    assert agree(code, {"m": net}).startswith("a guard raised RuntimeError: Internal error: NestedTensorImpl")

"""Guard classes: the condition each fails under and the sentence it names (pdyn/guards/guards.py)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from pdyn.guards.guards import (AliasGuard, DictKeysGuard, EqualsGuard, GlobalNameGuard, GradModeGuard, GuardSet,
                               IdGuard, LenGuard, TypeGuard)
from pdyn.guards.module_guards import NoHooksGuard
from pdyn.guards.tensor_guards import TensorGuard
from pdyn.sources import LocalSource

X = LocalSource("x")


def fails(guard: Any, value: Any) -> list[str]:
    """The sentence of `guard`'s first failing check for `value`, as the generated code stops there."""
    consts: dict[str, Any] = {}

    def hoist(obj: Any, hint: str) -> str:
        name = f"_c{len(consts)}"
        consts[name] = obj
        return name

    for cond, sentence in guard.checks("v", hoist):
        if eval(cond, {**consts, "v": value}):
            return [sentence]
    return []


def tensor_guard(t: torch.Tensor, dynamic: tuple[int, ...] = ()) -> TensorGuard:
    sizes = tuple(None if i in dynamic else s for i, s in enumerate(t.shape))
    strides = tuple(None if i in dynamic else s for i, s in enumerate(t.stride()))
    return TensorGuard(X, type(t), t.dtype, t.device, t.requires_grad, sizes, strides)


def test_tensor_guard_holds_for_same_metadata_other_data():
    assert fails(tensor_guard(torch.zeros(2, 3)), torch.ones(2, 3)) == []


@pytest.mark.parametrize("other, sentence", [
    (torch.zeros(2, 4), "L['x'].size() == (2, 3)"),
    (torch.zeros(2, 3, dtype=torch.float64), "L['x'] is a float32 cpu tensor not requiring grad"),
    (torch.zeros(2, 3, requires_grad=True), "L['x'] is a float32 cpu tensor not requiring grad"),
    (torch.zeros(3, 2).t(), "L['x'].stride() == (3, 1)"),
    (torch.nn.Parameter(torch.zeros(2, 3)), "type(L['x']) is torch.Tensor"),
])
def test_tensor_guard_fails_with_the_sentence_of_what_changed(other, sentence):
    assert fails(tensor_guard(torch.zeros(2, 3)), other) == [sentence]


def test_tensor_guard_on_meta_device_compares_the_device():
    guard = tensor_guard(torch.zeros(2, device="meta"))
    assert fails(guard, torch.zeros(2, device="meta")) == []
    assert fails(guard, torch.zeros(2)) == ["L['x'] is a float32 meta tensor not requiring grad"]


def test_tensor_guard_dynamic_dim_accepts_any_size_but_checks_rank():
    guard = tensor_guard(torch.zeros(5, 3), dynamic=(0,))
    assert fails(guard, torch.zeros(9, 3)) == []
    assert fails(guard, torch.zeros(9, 4)) == ["L['x'].dim() == 2 and L['x'].size(1) == 3"]
    assert fails(guard, torch.zeros(9)) == ["L['x'].dim() == 2 and L['x'].size(1) == 3"]


def test_tensor_guard_sentence_marks_dynamic_dims():
    assert tensor_guard(torch.zeros(5, 3), dynamic=(0,)).sentence() == "L['x'] is a float32 cpu Tensor of size (*, 3)"


def test_equals_guard_checks_type_and_value():
    guard = EqualsGuard(X, 3)
    assert fails(guard, 3) == []
    assert fails(guard, 4) == ["L['x'] == 3"]
    assert fails(guard, 3.0) == ["L['x'] == 3"]
    assert fails(guard, True) == ["L['x'] == 3"]


def test_equals_guard_on_nan_holds_for_nan():
    guard = EqualsGuard(X, float("nan"))
    assert fails(guard, float("nan")) == []
    assert fails(guard, 1.0) == ["L['x'] == nan"]


def test_equals_guard_on_inf_and_none_and_dtype():
    assert fails(EqualsGuard(X, float("inf")), float("inf")) == []
    assert fails(EqualsGuard(X, float("inf")), 1e308) == ["L['x'] == inf"]
    assert fails(EqualsGuard(X, None), 0) == ["L['x'] == None"]
    assert fails(EqualsGuard(X, torch.float32), torch.float32) == []
    assert fails(EqualsGuard(X, torch.float32), torch.float16) == ["L['x'] == torch.float32"]


def test_type_len_and_dict_keys_guards():
    assert fails(TypeGuard(X, list), []) == []
    assert fails(TypeGuard(X, list), ()) == ["type(L['x']) is list"]
    assert fails(LenGuard(X, tuple, 2), (1, 2)) == []
    assert fails(LenGuard(X, tuple, 2), [1, 2]) == ["L['x'] is a tuple of length 2"]
    guard = DictKeysGuard(X, dict, ("a", "b"))
    assert fails(guard, {"a": 1, "b": 2}) == []
    assert fails(guard, {"b": 2, "a": 1}) == ["L['x'] is a dict with keys ['a', 'b']"]


def test_id_guard_needs_the_same_object():
    module = torch.nn.ReLU()
    guard = IdGuard(X, module)
    assert fails(guard, module) == []
    assert fails(guard, torch.nn.ReLU()) == ["L['x'] is the same ReLU object (ReLU)"]


def test_no_hooks_guard_fails_once_a_hook_is_registered():
    module = torch.nn.ReLU()
    assert fails(NoHooksGuard(X), module) == []
    module.register_forward_hook(lambda *a: None)
    assert fails(NoHooksGuard(X), module) == [NoHooksGuard(X).sentence()]


def test_global_and_grad_mode_guards():
    assert eval(GlobalNameGuard(None, name="len").fail_expr("", str), {"G": {"len": 1}})
    assert GlobalNameGuard(None, name="len").sentence() == "no global named 'len' shadows the builtin"
    with torch.no_grad():
        assert fails(GradModeGuard(None, enabled=True), None) == ["torch.is_grad_enabled() is True"]
    assert fails(GradModeGuard(None, enabled=True), None) == []


def test_alias_guard_sentence_names_both_sources():
    assert AliasGuard(X, other=LocalSource("y")).sentence() == "L['x'] is L['y']"
    assert AliasGuard(X, other=LocalSource("y"), same=False).sentence() == "L['x'] is not L['y']"


def test_alias_guard_fails_unless_the_two_sources_are_as_traced():
    """The one-name form reads the other source from L; guard_codegen binds both instead."""
    t, u = torch.ones(1), torch.ones(1)
    same, apart = AliasGuard(X, other=LocalSource("y")), AliasGuard(X, other=LocalSource("y"), same=False)
    for guard, y, failed in [(same, t, False), (same, u, True), (apart, u, False), (apart, t, True)]:
        (cond, _), = guard.checks("v", lambda obj, hint: hint)
        assert eval(cond, {"v": t, "L": {"y": y}}) is failed
        names = {X: "a", LocalSource("y"): "b"}
        (bound, _), = guard.bound_checks(names.__getitem__, lambda obj, hint: hint)
        assert eval(bound, {"a": t, "b": y}) is failed


def test_guard_set_keeps_the_first_guard_per_key_in_order():
    guards = GuardSet()
    first = EqualsGuard(X, 1)
    guards.add(first)
    guards.add(EqualsGuard(X, 2))
    guards.add(TypeGuard(LocalSource("y"), int))
    guards.add(GradModeGuard(None))
    guards.add(GradModeGuard(None, enabled=False))
    assert len(guards) == 3
    assert list(guards)[0] is first
    assert [type(g).__name__ for g in guards] == ["EqualsGuard", "TypeGuard", "GradModeGuard"]

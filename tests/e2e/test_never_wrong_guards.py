"""End-to-end: a cache entry never serves a call it was not compiled for. Each test calls ONE
optimized function several times, with a value on a later call that must fail the guard of an
earlier entry (-0.0 after 0.0, True after 1, Color.BLUE after Color.RED, an attribute set after
compiling, a global hook), and compares value, Python type or exception with eager every call."""

from __future__ import annotations

import enum
import math
from typing import Any, Callable

import pytest
import torch
from torch import nn

import pdyn
from tests.helpers import assert_same

INF, NAN = math.inf, float("nan")


class Color(enum.Enum):
    RED = 1
    BLUE = 2


class Flavor(str, enum.Enum):
    SWEET = "sweet"
    SOUR = "sour"


def outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, type | None]:
    try:
        return fn(*args), None
    except Exception as e:
        return None, type(e)


def same_as_eager(opt: Callable[..., Any], fn: Callable[..., Any], *args: Any) -> None:
    """One call: the optimized result (value, dtype, Python type) or exception type is eager's."""
    expected, expected_exc = outcome(fn, args)
    actual, actual_exc = outcome(opt, args)
    assert actual_exc is expected_exc, f"pdyn raised {actual_exc}, eager raised {expected_exc}"
    assert_same(actual, expected)


def over_calls(fn: Callable[..., Any], calls: list[tuple[Any, ...]], compiles: int) -> Callable[..., Any]:
    """`fn` optimized, called with each argument tuple in turn, each compared with eager."""
    opt = pdyn.optimize(fn, backend="eager")
    for args in calls:
        same_as_eager(opt, fn, *args)
    assert_compiles(opt, compiles)
    return opt


def assert_compiles(opt: Callable[..., Any], compiles: int, fallbacks: int = 0) -> None:
    stats = pdyn.stats(opt)
    assert (stats["compiles"], stats["eager_fallbacks"]) == (compiles, fallbacks), stats


X = torch.ones(3)


# 1. float, bool and int constants: -0.0 is not 0.0, NaN is NaN, True is not 1 is not 1.0


def test_negative_zero_argument_fails_the_zero_guard():
    over_calls(lambda x, alpha: x / alpha, [(X, 0.0), (X, -0.0), (X, 0.0), (X, -0.0)], compiles=2)


def test_nan_argument_matches_the_nan_entry():
    fn = lambda x, a: (x + a, a)  # noqa: E731
    over_calls(fn, [(X, NAN), (X, float("nan")), (X, 1.5), (X, float("nan"))], compiles=2)


def test_infinities_are_told_apart():
    over_calls(lambda x, a: (x * a, a), [(X, INF), (X, -INF), (X, INF)], compiles=2)


def test_bool_int_and_float_of_equal_value_are_three_entries():
    fn = lambda x, a: (x * a, type(a).__name__, a)  # noqa: E731
    over_calls(fn, [(X, 1), (X, True), (X, 1.0), (X, 1), (X, True)], compiles=3)
    pdyn.reset()
    over_calls(fn, [(X, 0), (X, False), (X, 0.0), (X, -0.0), (X, 0)], compiles=4)


def test_constants_nested_in_tuples_and_lists_keep_sign_and_type():
    fn = lambda x, t: (x / t[0], t[1], type(t[1][0]).__name__)  # noqa: E731
    calls = [(X, (0.0, [1])), (X, (-0.0, [1])), (X, (0.0, [True])), (X, (-0.0, [1.0])), (X, (0.0, [1]))]
    over_calls(fn, calls, compiles=4)


def test_tuple_constant_from_a_global_keeps_item_types():
    def f(x):
        return x * SCALES[0], type(SCALES[0]).__name__

    opt = pdyn.optimize(f, backend="eager")
    for value in ((2,), (2.0,), (True,), (-0.0,), (0.0,), (2,)):
        globals()["SCALES"] = value
        same_as_eager(opt, f, X)
    assert_compiles(opt, 5)


# 2. dict keys: same types, same sign; keys with no literal repr work in guards and frame code


def test_dict_keys_of_equal_value_but_other_type_recompile():
    fn = lambda x, d: [(type(k).__name__, x + d[k]) for k in d]  # noqa: E731
    calls = [(X, {1: X}), (X, {True: X}), (X, {1.0: X}), (X, {1: X}), (X, {"a": X})]
    over_calls(fn, calls, compiles=4)


def test_dict_key_negative_zero_recompiles():
    fn = lambda x, d: [(str(k), 1 / k if k else x + v) for k, v in d.items()]  # noqa: E731
    over_calls(fn, [(X, {0.0: X}), (X, {-0.0: X}), (X, {0.0: X})], compiles=2)


def test_dict_tuple_keys_compare_items_by_type():
    fn = lambda x, d: [(k, x * len(k)) for k in d]  # noqa: E731
    over_calls(fn, [(X, {(1, 2): 0}), (X, {(True, 2): 0}), (X, {(1, 2): 0})], compiles=2)


NON_LITERAL_KEYS = (INF, NAN, -INF, torch.float32, Color.RED, Flavor.SOUR, (1, INF), torch.device("cpu"))


def test_dict_keys_with_no_literal_repr_are_read_in_guards_and_frame_code():
    def f(x, d):
        return [x + v for v in d.values()], d[INF] * 2

    def call(i: int) -> tuple[Any, ...]:
        return X, {k: torch.full((3,), float(i + n)) for n, k in enumerate(NON_LITERAL_KEYS)}

    opt = over_calls(f, [call(0), call(1), call(2)], compiles=1)
    changed = dict(call(3)[1])
    changed[Color.BLUE] = changed.pop(Color.RED)
    same_as_eager(opt, f, X, changed)
    assert_compiles(opt, 2)


def test_non_literal_keys_survive_a_graph_break_and_symbolic_sizes():
    def f(x, d):
        n = d[INF].shape[0]
        y = d[torch.float32] * 2
        pdyn.graph_break()
        return y + n, d[Color.RED].sum() + n, n

    opt = pdyn.optimize(f, backend="eager")
    for size in (2, 3, 4, 5):
        t = torch.arange(float(size))
        same_as_eager(opt, f, X, {INF: t, torch.float32: t + 1, Color.RED: t * 3})
    assert pdyn.stats(opt)["eager_fallbacks"] == 0


# 3. Enum members (and objects an `is` decided) are pinned by identity


def test_enum_argument_is_guarded_by_identity():
    def f(x, color):
        if color is Color.RED:
            return x + 1, color
        return x - 1, color.name

    over_calls(f, [(X, Color.RED), (X, Color.BLUE), (X, Color.RED), (X, Color.BLUE)], compiles=2)


def test_str_enum_is_not_its_string():
    def f(x, flavor):
        return (x + 1 if flavor == "sweet" else x - 1), type(flavor).__name__, flavor

    calls = [(X, Flavor.SWEET), (X, Flavor.SOUR), (X, "sweet"), (X, Flavor.SWEET), (X, "sweet")]
    over_calls(f, calls, compiles=3)


def test_enum_read_from_a_global_and_from_a_module_attribute():
    def f(x):
        return x * 2 if MODE is Color.RED else x * 3

    opt = pdyn.optimize(f, backend="eager")
    for mode in (Color.RED, Color.BLUE, Color.RED):
        globals()["MODE"] = mode
        same_as_eager(opt, f, X)
    assert_compiles(opt, 2)

    class M(nn.Module):
        def forward(self, x):
            return x + 1 if self.mode == Color.RED else x - 1

    m = M()
    opt_m = pdyn.optimize(lambda m, x: m(x), backend="eager")
    for mode in (Color.RED, Color.BLUE, Color.RED):
        m.mode = mode
        same_as_eager(opt_m, lambda m, x: m(x), m, X)
    assert_compiles(opt_m, 2)


class Sentinel:
    pass


DEFAULT = Sentinel()


def test_identity_test_against_a_sentinel_pins_the_object():
    def f(x, option):
        return x + 1 if option is DEFAULT else x - 1

    over_calls(f, [(X, DEFAULT), (X, Sentinel()), (X, DEFAULT), (X, Sentinel())], compiles=2)


def test_identity_of_two_objects_pins_their_aliasing():
    a, b = Sentinel(), Sentinel()
    fn = lambda x, p, q: x + 1 if p is q else x - 1  # noqa: E731
    over_calls(fn, [(X, a, a), (X, a, b), (X, b, b), (X, b, a)], compiles=2)


def test_is_none_on_a_fresh_object_each_call_compiles_once():
    fn = lambda x, cfg: x if cfg is None else x * 2  # noqa: E731
    over_calls(fn, [(X, Sentinel()), (X, Sentinel()), (X, Sentinel())], compiles=1)


# 4. getattr(obj, name, default) and hasattr guard the attribute's absence (and presence)


class Plain:
    def method(self):
        return 1


def attr_reader(x, obj):
    return x + getattr(obj, "scale", 0.5), hasattr(obj, "shift"), hasattr(obj, "method")


def test_attribute_set_later_on_the_instance_or_the_class_is_seen():
    obj = Plain()
    opt = pdyn.optimize(attr_reader, backend="eager")
    same_as_eager(opt, attr_reader, X, obj)
    obj.scale = 2.0
    same_as_eager(opt, attr_reader, X, obj)
    Plain.shift = 1
    try:
        same_as_eager(opt, attr_reader, X, obj)
        del obj.scale
        same_as_eager(opt, attr_reader, X, obj)
    finally:
        del Plain.shift
    same_as_eager(opt, attr_reader, X, obj)
    del Plain.method
    try:
        same_as_eager(opt, attr_reader, X, obj)
    finally:
        Plain.method = lambda self: 1
    assert_compiles(opt, 5)


def test_module_attribute_absent_then_set_then_removed():
    class M(nn.Module):
        def forward(self, x):
            return x * getattr(self, "scale", 1.0) + (1 if hasattr(self, "bias_flag") else 0)

    m = M()
    fn = lambda m, x: m(x)  # noqa: E731
    opt = pdyn.optimize(fn, backend="eager")
    same_as_eager(opt, fn, m, X)
    m.scale = 3.0
    same_as_eager(opt, fn, m, X)
    M.bias_flag = True
    try:
        same_as_eager(opt, fn, m, X)
    finally:
        del M.bias_flag
    del m.scale
    same_as_eager(opt, fn, m, X)
    assert_compiles(opt, 3)


class Settings:
    scale = 1.0


def test_class_attribute_read_through_the_class_follows_reassignment():
    def f(x):
        return x * Settings.scale, getattr(Settings, "offset", None)

    opt = pdyn.optimize(f, backend="eager")
    same_as_eager(opt, f, X)
    Settings.scale = 2.5
    same_as_eager(opt, f, X)
    Settings.offset = 3
    try:
        same_as_eager(opt, f, X)
    finally:
        del Settings.offset
    same_as_eager(opt, f, X)
    assert_compiles(opt, 3)


def test_class_with_getattr_hook_is_not_answered_as_missing():
    class Lazy:
        def __getattr__(self, name):
            return 7

    fn = lambda x, obj: x + getattr(obj, "anything", 0)  # noqa: E731
    opt = pdyn.optimize(fn, backend="eager")
    for _ in range(2):
        same_as_eager(opt, fn, X, Lazy())


# 5. torch functions that answer a fact about a tensor are symbolic or guarded


SIZE_QUESTIONS = {
    "torch.numel": lambda x: torch.numel(x),
    "x.numel": lambda x: x.numel(),
    "Tensor.numel": lambda x: torch.Tensor.numel(x),
    "x.nelement": lambda x: x.nelement(),
    "x.size": lambda x: x.size(),
    "Tensor.size": lambda x: torch.Tensor.size(x),
    "Tensor.dim": lambda x: torch.Tensor.dim(x),
    "x.ndimension": lambda x: x.ndimension(),
    "x.nbytes": lambda x: x.nbytes,
    "x.element_size": lambda x: x.element_size(),
    "x.is_floating_point": lambda x: x.is_floating_point(),
    "torch.is_floating_point": lambda x: torch.is_floating_point(x),
    "torch.is_complex": lambda x: torch.is_complex(x),
    "torch.is_tensor": lambda x: torch.is_tensor(x),
    "x.is_contiguous": lambda x: x.is_contiguous(),
    "x.t().is_contiguous": lambda x: x.t().is_contiguous(),
    "x.get_device": lambda x: x.get_device(),
    "torch.is_same_size": lambda x: torch.is_same_size(x, torch.ones(3, 4)),
    "Tensor.is_same_size": lambda x: x.is_same_size(torch.ones(3, 4)),
}


@pytest.mark.parametrize("name", SIZE_QUESTIONS)
def test_tensor_fact_follows_the_tensor_over_calls(name):
    question = SIZE_QUESTIONS[name]

    def f(x):
        return x * 2, question(x)

    shapes = [(2, 3), (3, 4), (5, 4), (6, 7), (3, 4), (2, 3)]
    calls = [(torch.ones(s),) for s in shapes] + [(torch.ones(4, 3).t(),), (torch.ones(2, 3, dtype=torch.int64),)]
    opt = pdyn.optimize(f, backend="eager")
    for args in calls:  # a size handed back to Python may run eagerly once it changes: never wrong
        same_as_eager(opt, f, *args)


@pytest.mark.parametrize("count", [torch.numel, torch.Tensor.numel, torch.Tensor.nelement,
                                   lambda x: x.nbytes // x.element_size()])
def test_element_count_stays_symbolic_and_compiles_once(count):
    fn = lambda x: x.sum() / count(x)  # noqa: E731
    over_calls(fn, [(torch.ones(n, 2),) for n in (2, 3, 4, 5, 6)], compiles=1)


def test_same_size_answer_pins_the_sizes_it_compared():
    fn = lambda x, y: x + 1 if torch.is_same_size(x, y) else x - 1  # noqa: E731
    calls = [(torch.ones(n, 2), torch.ones(m, 2)) for n, m in ((2, 2), (3, 3), (3, 4), (5, 5), (2, 2))]
    opt = over_calls(fn, calls, compiles=2)  # 2: sizes that keep changing become a graph break
    assert pdyn.stats(opt)["graph_breaks"] == 1


# 6. global nn.Module hooks registered after compiling run


def test_global_forward_hook_registered_after_compiling_runs():
    m = nn.Linear(3, 2)
    fn = lambda m, x: m(x) * 2  # noqa: E731
    opt = pdyn.optimize(fn, backend="eager")
    x = torch.randn(4, 3)
    same_as_eager(opt, fn, m, x)
    handle = nn.modules.module.register_module_forward_hook(lambda mod, args, out: out + 100)
    try:
        same_as_eager(opt, fn, m, x)
        same_as_eager(opt, fn, m, x)
    finally:
        handle.remove()
    same_as_eager(opt, fn, m, x)
    pre = nn.modules.module.register_module_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    try:
        same_as_eager(opt, fn, m, x)
    finally:
        pre.remove()
    same_as_eager(opt, fn, m, x)
    assert pdyn.stats(opt)["cache_hits"] >= 2


def test_hook_free_entry_is_reused_after_the_hook_is_removed():
    m = nn.Linear(3, 2)
    fn = lambda m, x: m(x)  # noqa: E731
    opt = pdyn.optimize(fn, backend="eager")
    x = torch.randn(4, 3)
    same_as_eager(opt, fn, m, x)
    handle = nn.modules.module.register_module_forward_hook(lambda mod, args, out: -out)
    same_as_eager(opt, fn, m, x)
    handle.remove()
    hits = pdyn.stats(opt)["cache_hits"]
    same_as_eager(opt, fn, m, x)
    assert pdyn.stats(opt)["cache_hits"] == hits + 1

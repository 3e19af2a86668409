"""Python semantics under pdyn: assert, raise, f-strings and formatting, and the builtins that
programs call on known values (isinstance, len, getattr, hasattr, type, min, max, sum, any, all).

PYTEST_DONT_REWRITE: the programs' asserts must stay plain Python asserts, not pytest's rewrite.
"""

from __future__ import annotations

import torch

from tests.helpers import check


class Config:
    hidden = 4
    act = "relu"

    def __eq__(self, other):
        return type(other) is Config


def test_passing_assert_on_shape_and_type():
    def f(x, n):
        assert x.ndim == 2, "need a matrix"
        assert isinstance(n, int)
        assert n > 0
        return x * n

    check(f, torch.randn(2, 3), 3)


def test_failing_assert_with_message_matches_eager():
    def f(x):
        assert x.shape[0] == 5, f"expected 5 rows, got {x.shape[0]}"
        return x + 1

    check(f, torch.randn(3), graphs=0)


def test_failing_bare_assert_matches_eager():
    def f(x, n):
        y = x * 2
        assert n < 0
        return y

    check(f, torch.randn(3), 4, graphs=0)


def test_raise_value_error_with_message():
    def f(x, mode):
        if mode not in ("a", "b"):
            raise ValueError(f"unknown mode {mode!r}")
        return x + 1

    check(f, torch.randn(2), "c", graphs=0)
    check(f, torch.randn(2), "a")


def test_raise_exception_class_and_custom_subclass():
    class ShapeError(RuntimeError):
        pass

    def f(x, which):
        if which == 0:
            raise KeyError
        if which == 1:
            raise ShapeError("bad", x.shape[0])
        raise NotImplementedError()

    for which in range(3):
        check(f, torch.randn(2), which, graphs=0)


def test_fstrings_of_constants_and_shapes():
    def f(x, name):
        n = x.shape[0]
        tag = f"{name}:{n:03d}|{2.5:.1f}|{name!r}|{'x'!s:>3}|{n}"
        return x * len(tag), tag

    check(f, torch.randn(4), "layer")


def test_str_methods_and_format():
    def f(x, name):
        parts = "a,b,c".split(",")
        joined = "-".join(parts)
        text = "{}_{}".format(name.upper(), len(parts))
        ok = name.startswith("lay") and joined.endswith("c")
        return (x + 1 if ok else x - 1), joined, text, str(3), repr("q"), name.replace("a", "o")

    check(f, torch.randn(2), "layer")


def test_isinstance_on_tensors_containers_and_tuples_of_types():
    def f(x, items, n):
        r = (isinstance(x, torch.Tensor), isinstance(items, (list, tuple)), isinstance(n, float),
             isinstance(n, (int, float)), isinstance(items, dict), isinstance(True, int))
        return x * sum(r), r

    check(f, torch.randn(2), [1], 3)


def test_len_of_everything():
    def f(x, items, d):
        return x * len(x), len(items), len(d), len("abc"), len(range(2, 10, 3)), len({1, 2}), len(x.shape)

    check(f, torch.randn(5, 2), [1, 2], {"a": 1})


def test_getattr_hasattr_with_defaults_on_object():
    def f(x, cfg):
        hidden = getattr(cfg, "hidden")
        missing = getattr(cfg, "nope", 7)
        act = getattr(torch, cfg.act)
        has = (hasattr(cfg, "act"), hasattr(cfg, "dropout"), hasattr(x, "shape"), hasattr(x, "nothing"))
        return act(x) * hidden + missing, has

    check(f, torch.randn(3), Config())


def test_getattr_missing_without_default_raises():
    def f(x, cfg):
        return x * getattr(cfg, "dropout")

    check(f, torch.randn(3), Config(), graphs=0)


def test_type_comparisons():
    def f(x, n, items):
        r = (type(n) is int, type(items) == list, type(x) is torch.Tensor, type(n).__name__)
        return x + 1, r

    check(f, torch.randn(2), 3, [1])


def test_min_max_abs_sum_on_known_values():
    def f(x, ws):
        lo = min(3, 1, 2)
        hi = max([4, 9, 2])
        m = max(len(ws), 1)
        s = sum(ws)
        s2 = sum([1, 2, 3], 10)
        return x * lo + hi - m + s + abs(-3) + s2

    check(f, torch.randn(2), [torch.randn(2), torch.randn(2)])


def test_min_max_of_tensors_and_any_all():
    def f(x, flags):
        big = max(x.shape)
        small = min(x.shape[0], 3)
        r = (any(flags), all(flags), any([]), all([]), any([f > 1 for f in [0, 2]]))
        return x.sum(0) * big + small, r

    check(f, torch.randn(4, 2), [True, False])


def test_range_enumerate_zip_on_known_values():
    def f(x):
        r = list(range(1, 7, 2))
        e = list(enumerate("ab", 3))
        z = list(zip([1, 2, 3], "xy"))
        return x * sum(r), e, z, range(3)[1], len(range(0, 10, 4))

    check(f, torch.randn(2))


def test_int_float_bool_str_conversions():
    def f(x, s):
        a = int("12") + int(3.9) + int(s)
        b = float("1.5") + float(2)
        c = bool(0), bool("x"), bool([]), str(1.5), round(2.567, 2), divmod(17, 5), pow(2, 10)
        return x * a + b, c

    check(f, torch.randn(2), "4")


def test_int_of_bad_string_raises_value_error():
    def f(x, s):
        return x * int(s)

    check(f, torch.randn(2), "4x", graphs=0)


def test_tuple_list_dict_set_constructors():
    def f(x, ws):
        t = tuple(ws)
        l2 = list(t)
        d = dict(a=x, b=1)
        d2 = dict([("k", x * 2)])
        s = set([1, 1, 2])
        return t, l2, d, d2, s, frozenset({3})

    check(f, torch.randn(2), [torch.randn(2)])


def test_callable_and_iter_next():
    def f(x):
        it = iter([x, x * 2, x * 3])
        a = next(it)
        b = next(it)
        rest = list(it)
        done = next(it, None)
        return a + b, rest, done, callable(f), callable(3)

    check(f, torch.randn(2))


def test_sorted_reversed_of_constants():
    def f(x, items):
        return x + 1, sorted(items), sorted(items, reverse=True), list(reversed(items)), sorted("cab")

    check(f, torch.randn(2), [3, 1, 2])

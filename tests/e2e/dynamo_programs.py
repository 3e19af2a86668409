"""Small programs in the style of torch's dynamo tests (test/dynamo/test_functions.py and
test_misc.py), written afresh: builtins, closures, containers, comprehensions, strings,
generators, unpacking, isinstance, exceptions, globals, nonlocal, defaults, tensor attributes,
dtype/device queries, mutation, slicing. `PROGRAMS` maps a name to (fn, make_args); test_dynamo_programs
runs each under pdyn and compares with eager and with torch.compile's graph and break counts."""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import itertools
import math
import operator
from typing import Any, Callable, NamedTuple

import torch

PROGRAMS: dict[str, tuple[Callable[..., Any], Callable[[], tuple[Any, ...]]]] = {}


def two() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(3, 4), torch.randn(3, 4)


def one() -> tuple[torch.Tensor]:
    return (torch.randn(3, 4),)


def program(make_args: Callable[[], tuple[Any, ...]] = two) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        PROGRAMS[fn.__name__] = (fn, make_args)
        return fn
    return register


SCALE = 2.5
NAMES = ("a", "b", "c")
TABLE = {"relu": torch.relu, "tanh": torch.tanh}


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Pair(NamedTuple):
    first: torch.Tensor
    second: torch.Tensor


@dataclasses.dataclass
class Box:
    value: torch.Tensor
    scale: float = 2.0


class Counter:
    def __init__(self) -> None:
        self.n = 0

    def bump(self, x: torch.Tensor) -> torch.Tensor:
        self.n += 1
        return x * self.n


# ---- builtins ------------------------------------------------------------------------------------

@program()
def builtin_min_max_abs(a, b):
    return a * max(1, 2, 3) + b * min(4.0, 2.5) + abs(-3)


@program()
def builtin_len_range_sum(a, b):
    total = sum(range(len(NAMES)))
    return a + total + sum([1, 2, 3])


@program()
def builtin_zip_enumerate(a, b):
    out = a
    for i, (p, q) in enumerate(zip([a, b], [b, a])):
        out = out + (p * q) * i
    return out


@program()
def builtin_map_filter(a, b):
    vals = list(map(lambda t: t + 1, [a, b]))
    evens = list(filter(lambda n: n % 2 == 0, range(6)))
    return vals[0] * len(evens) + vals[1]


@program()
def builtin_sorted_reversed(a, b):
    order = sorted([3, 1, 2], reverse=True)
    back = list(reversed(order))
    return a * order[0] + b * back[0]


@program()
def builtin_any_all(a, b):
    flags = [True, False, True]
    return a + 1 if any(flags) and not all(flags) else a - 1


@program()
def builtin_round_divmod_pow(a, b):
    q, r = divmod(17, 5)
    return a * round(2.6) + b * q + r + pow(2, 3)


@program()
def builtin_getattr_hasattr(a, b):
    box = Box(a)
    if hasattr(box, "scale") and not hasattr(box, "missing"):
        return getattr(box, "value") * getattr(box, "scale", 1.0) + b
    return b


@program()
def builtin_callable_id(a, b):
    f = torch.relu
    return f(a) if callable(f) and id(f) == id(torch.relu) else a


@program()
def builtin_int_float_bool(a, b):
    return a * int("3") + b * float(2) + bool([1])


@program()
def builtin_math(a, b):
    return a * math.sqrt(16) + b * math.floor(2.7) + math.pi


@program()
def builtin_operator_module(a, b):
    return operator.add(a, b) * operator.mul(2, 3) - operator.neg(b)


@program()
def builtin_functools_reduce(a, b):
    return functools.reduce(operator.add, [a, b, a])


@program()
def builtin_itertools(a, b):
    total = a
    for p, q in itertools.product([1, 2], [3]):
        total = total + p * q
    for t in itertools.chain([a], [b]):
        total = total + t
    return total


# ---- closures, nonlocal, defaults, globals -------------------------------------------------------

@program()
def closure_reads_outer(a, b):
    k = 3

    def inner(t):
        return t * k

    return inner(a) + inner(b)


@program()
def closure_nonlocal_counter(a, b):
    count = 0

    def bump():
        nonlocal count
        count += 1

    bump()
    bump()
    return a * count + b


@program()
def closure_returned_and_called(a, b):
    def make(scale):
        return lambda t: t * scale

    return make(2)(a) + make(3)(b)


@program()
def closure_over_tensor(a, b):
    def add_a(t):
        return t + a

    return add_a(b) * 2


@program()
def default_args(a, b):
    def f(t, scale=2, *, shift=1):
        return t * scale + shift

    return f(a) + f(b, 3, shift=0)


@program()
def star_args_kwargs(a, b):
    def f(*args, **kwargs):
        return sum(args) * kwargs.get("k", 1)

    return f(a, b, k=2) + f(a)


@program()
def globals_read(a, b):
    return a * SCALE + len(NAMES)


@program()
def global_table_dispatch(a, b):
    return TABLE["relu"](a) + TABLE["tanh"](b)


@program()
def functools_partial_call(a, b):
    mul = functools.partial(torch.mul, other=2)
    return mul(a) + b


@program()
def nested_functions_three_deep(a, b):
    def f(t):
        def g(u):
            def h(v):
                return v.sin()
            return h(u) + 1
        return g(t) * 2
    return f(a) + f(b)


# ---- containers and comprehensions ---------------------------------------------------------------

@program()
def list_comprehension(a, b):
    return sum([t * i for i, t in enumerate([a, b, a])])


@program()
def dict_comprehension(a, b):
    d = {name: t for name, t in zip(("x", "y"), (a, b))}
    return d["x"] - d["y"]


@program()
def set_comprehension_len(a, b):
    s = {i % 3 for i in range(10)}
    return a * len(s)


@program()
def generator_expression_sum(a, b):
    return sum(t.sum() for t in (a, b))


@program()
def list_mutation(a, b):
    items = [a]
    items.append(b)
    items.extend([a * 2])
    items.insert(0, b)
    popped = items.pop()
    items[1] = items[1] + popped
    return torch.stack(items).sum(0)


@program()
def dict_mutation(a, b):
    d = {"a": a}
    d["b"] = b
    d.update(c=a + b)
    del d["a"]
    out = d.pop("c")
    return out + d.get("b") + len(d) + d.setdefault("z", 1)


@program()
def list_argument_mutated(a, b):
    def push(acc, t):
        acc.append(t * 2)
        return len(acc)

    acc = []
    n = push(acc, a) + push(acc, b)
    return acc[0] + acc[1] * n


@program()
def tuple_unpacking_star(a, b):
    first, *rest = (a, b, a + b)
    x, (y, z) = 1, (2, 3)
    return first * x + rest[-1] * (y + z)


@program()
def dict_items_keys_values(a, b):
    d = {"p": a, "q": b}
    total = a * 0
    for k, v in d.items():
        total = total + v * len(k)
    return total + sum(d.values()) + len(list(d.keys()))


@program()
def ordered_dict_and_defaultdict(a, b):
    od = collections.OrderedDict()
    od["x"] = a
    od["y"] = b
    dd = collections.defaultdict(int)
    dd["k"] += 2
    return od["x"] + od["y"] * dd["k"]


@program()
def namedtuple_fields(a, b):
    p = Pair(a, b)
    return p.first * 2 + p[1] + len(p)


@program()
def slicing_lists_and_tuples(a, b):
    xs = [a, b, a, b, a]
    return sum(xs[1:4]) + xs[::-2][0] + xs[-1]


@program()
def tensor_slicing(a, b):
    return a[1:, :2].sum() + b[..., -1] + a[None, 0].sum()


@program()
def contains_checks(a, b):
    keys = {"x": 1}
    out = a
    if "x" in keys and "y" not in keys:
        out = out + 1
    if 2 in [1, 2, 3]:
        out = out * 2
    return out


@program()
def list_index_count(a, b):
    xs = [3, 1, 3, 2]
    return a * xs.index(2) + b * xs.count(3)


@program()
def deque_ops(a, b):
    d = collections.deque([a])
    d.append(b)
    d.appendleft(a * 2)
    return d.popleft() + d.pop() + d[0]


# ---- strings -------------------------------------------------------------------------------------

@program()
def string_format_and_compare(a, b):
    name = "layer_{}".format(3)
    if name.startswith("layer") and f"{name}!" == "layer_3!":
        return a + len(name)
    return b


@program()
def string_methods(a, b):
    s = "Hello, World"
    parts = s.lower().split(", ")
    return a * len(parts) + b * len(" ".join(parts).upper()) + s.find("W")


@program()
def string_in_dict_keys(a, b):
    d = {"weight": a, "bias": b}
    total = 0
    for key in sorted(d):
        total = total + d[key] * len(key.replace("ei", ""))
    return total


# the generators, objects, exceptions, tensor-attribute and control-flow programs register themselves
from tests.e2e import dynamo_programs_numpy, dynamo_programs_objects  # noqa: E402,F401

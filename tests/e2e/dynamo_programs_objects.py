"""The dynamo-style programs over generators, types and objects, exceptions, tensor attributes and
dtype/device queries, and control flow (the rest are dynamo_programs.py)."""

from __future__ import annotations

import math

import torch

from tests.e2e.dynamo_programs import NAMES, Box, Color, Counter, program


# ---- generators ----------------------------------------------------------------------------------

def _gen(ts):
    for t in ts:
        yield t * 2


@program()
def generator_consumed_by_list(a, b):
    return sum(list(_gen([a, b])))


@program()
def generator_next(a, b):
    g = _gen([a, b])
    return next(g) - next(g)


@program()
def generator_yield_from(a, b):
    def inner():
        yield from _gen([a])
        yield b

    return torch.stack(list(inner())).sum(0)


# ---- types, isinstance, enums, dataclasses, objects ---------------------------------------------

@program()
def isinstance_checks(a, b):
    out = a
    if isinstance(a, torch.Tensor):
        out = out + 1
    if isinstance(3, (int, float)) and not isinstance("s", int):
        out = out * 2
    return out


@program()
def type_comparisons(a, b):
    return a + 1 if type(a) is torch.Tensor and type(1) == int else a


@program()
def enum_members(a, b):
    c = Color.RED
    return a * c.value if c is Color.RED and c != Color.GREEN else b


@program()
def dataclass_fields(a, b):
    box = Box(a, scale=3.0)
    box.value = box.value + b
    return box.value * box.scale


@program()
def user_object_method_and_attr(a, b):
    c = Counter()
    c.bump(a)
    return c.bump(b) + c.n


@program()
def class_defined_inside(a, b):
    class Local:
        def __init__(self, t):
            self.t = t

        def double(self):
            return self.t * 2

    return Local(a).double() + b


@program()
def staticmethod_classmethod_property(a, b):
    class K:
        base = 2

        @staticmethod
        def s(t):
            return t + 1

        @classmethod
        def c(cls, t):
            return t * cls.base

        @property
        def p(self):
            return 5

    return K.s(a) + K.c(b) + K().p


@program()
def inheritance_super(a, b):
    class Base:
        def f(self, t):
            return t + 1

    class Child(Base):
        def f(self, t):
            return super().f(t) * 2

    return Child().f(a)


@program()
def dunder_methods(a, b):
    class Vec:
        def __init__(self, t):
            self.t = t

        def __add__(self, other):
            return Vec(self.t + other.t)

        def __len__(self):
            return 2

        def __getitem__(self, i):
            return self.t * i

    v = Vec(a) + Vec(b)
    return v.t + len(v) + v[3]


# ---- exceptions ----------------------------------------------------------------------------------

@program()
def try_except_no_raise(a, b):
    try:
        out = a + b
    except ValueError:
        out = a - b
    return out


@program()
def try_except_caught(a, b):
    try:
        raise ValueError("x")
    except ValueError:
        return a * 2


@program()
def try_finally(a, b):
    out = a
    try:
        out = out + 1
    finally:
        out = out * 2
    return out


@program()
def key_error_caught(a, b):
    d = {"x": a}
    try:
        return d["y"]
    except KeyError:
        return b + 1


@program()
def raise_propagates(a, b):
    if a.shape[0] == 3:
        raise RuntimeError("three rows")
    return a


# ---- tensor attributes, dtype/device queries -----------------------------------------------------

@program()
def tensor_shape_reads(a, b):
    n, m = a.shape
    return a.reshape(m, n) * a.size(0) + a.dim() + a.ndim + a.numel()


@program()
def tensor_dtype_device(a, b):
    out = a
    if a.dtype == torch.float32 and a.device.type == "cpu":
        out = out.to(torch.float64)
    if a.is_floating_point() and not a.is_complex():
        out = out + 1
    return out


@program()
def tensor_requires_grad_query(a, b):
    return a * 2 if not a.requires_grad else a


@program()
def tensor_new_like(a, b):
    return torch.zeros_like(a) + a.new_ones(a.shape) + torch.full_like(b, 2.0)


@program()
def tensor_methods_chain(a, b):
    return a.t().contiguous().view(-1).sum() + b.mean(dim=1, keepdim=True)


@program()
def tensor_item_breaks(a, b):
    return a * a.sum().item()


@program()
def tensor_tolist(a, b):
    return b * len(a.tolist())


@program()
def torch_function_kwargs(a, b):
    return torch.cat([a, b], dim=0).sum(dim=0) + torch.clamp(a, min=-0.5, max=0.5).sum(0)


@program()
def torch_no_grad_block(a, b):
    with torch.no_grad():
        c = a * 2
    return c + b


@program()
def torch_dtype_constants(a, b):
    dt = torch.float16
    return a.to(dt).float() + torch.finfo(torch.float32).eps + b.to(dtype=torch.int32).float()


@program()
def size_arithmetic(a, b):
    s = a.size()
    return a.view(s[0] * s[1]).sum() + b.new_zeros(s[1:]).sum() + len(s)


@program()
def numel_and_dims_loop(a, b):
    out = a
    for d in range(a.dim()):
        out = out + a.size(d)
    return out


# ---- control flow --------------------------------------------------------------------------------

@program()
def while_loop_counter(a, b):
    i, out = 0, a
    while i < 3:
        out = out + b
        i += 1
    return out


@program()
def for_else_break(a, b):
    for i in range(5):
        if i == 2:
            break
    else:
        i = -1
    return a * i


@program()
def ternary_and_bool_ops(a, b):
    k = 2 if len(NAMES) > 2 else 3
    return (NAMES or ()) and a * k if (k and not None) else b


@program()
def data_dependent_branch(a, b):
    if a.sum() > 0:
        return a + b
    return a - b


@program()
def print_breaks(a, b):
    c = a + 1
    print("", end="")
    return c * b


@program()
def walrus_and_match_like(a, b):
    if (n := len(NAMES)) == 3:
        return a * n
    return b


@program()
def recursion(a, b):
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    return a * fact(4)


@program()
def lambda_sort_key(a, b):
    pairs = sorted([(2, a), (1, b)], key=lambda p: p[0])
    return pairs[0][1] - pairs[1][1]


@program()
def assert_statement(a, b):
    assert a.dim() == 2, "needs 2 dims"
    return a + b


@program()
def in_place_ops_on_input(a, b):
    a.add_(1)
    b.mul_(2)
    return a + b


@program()
def math_on_sizes(a, b):
    return a.flatten()[: math.prod(a.shape) // 2].sum() + b


@program()
def list_of_tensors_unbind(a, b):
    rows = a.unbind(0)
    return sum(r.sum() for r in rows) + b


@program()
def chunk_and_split(a, b):
    x, y = a.chunk(2, dim=1)
    p, q = b.split([1, 3], dim=1)
    return x.sum() + y.sum() + p.sum() + q.sum()


@program()
def index_error_caught(a, b):
    xs = [a, b]
    try:
        return xs[5]
    except IndexError:
        return a - b


@program()
def generator_yield_from_returns(a, b):
    def inner():
        yield a
        return 3

    def outer():
        n = yield from inner()
        yield b * n
        yield from (a, b)

    return sum(outer())

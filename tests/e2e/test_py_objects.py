"""The Python object model under pdyn: user classes made and used in the trace, descriptors, Python
attribute hooks, dunder methods, super(), dataclasses, namedtuples, enums, and a transformers config."""

from __future__ import annotations

import collections
import dataclasses
import enum
import typing

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend, check, check_calls


def shapes(*sizes):
    return [(torch.randn(*s),) for s in sizes]


class Vec:
    def __init__(self, t, scale=1.0):
        self.t = t
        self.scale = scale

    @property
    def scaled(self):
        return self.t * self.scale

    def __add__(self, other):
        if isinstance(other, Vec):
            return Vec(self.t + other.t, self.scale)
        return NotImplemented

    def __radd__(self, other):
        return Vec(self.t + other, self.scale)

    def __mul__(self, k):
        return Vec(self.t * k, self.scale)

    def __eq__(self, other):
        return isinstance(other, Vec) and self.scale == other.scale

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return self.t[i]

    def __contains__(self, k):
        return k == "t"

    def __call__(self, x):
        return x + self.t

    def __bool__(self):
        return self.scale > 0

    def __neg__(self):
        return Vec(-self.t, self.scale)


def test_instances_made_in_the_trace_with_dunders_and_properties():
    def f(x):
        a = Vec(x, 2.0)
        b = a + Vec(x + 1)
        c = 1 + (b * 3)
        d = -c
        same = a == Vec(x, 2.0)
        return d.scaled + a(x) + a[0], len(a), "t" in a, same, bool(a), a != b

    check_calls(f, *shapes((3, 4), (5, 4), (7, 4)), compiles=1)


def test_an_object_made_in_the_trace_escapes_rebuilt():
    def f(x):
        v = Vec(x.sin(), 3.0)
        v.extra = x.shape[0]
        return v

    backend = CountingBackend()
    opt = pdyn.optimize(f, backend=backend)
    for n in (2, 5):
        x = torch.randn(n)
        out = opt(x)
        assert type(out) is Vec and out.scale == 3.0 and out.extra == n
        torch.testing.assert_close(out.t, x.sin())
    assert len(backend.graphs) == 1 and pdyn.stats(opt)["graph_breaks"] == 0


class Base:
    kind = "base"

    def __init__(self, x):
        self.x = x

    def forward(self, y):
        return self.x + y

    @classmethod
    def make(cls, x):
        return cls(x)

    @staticmethod
    def twice(t):
        return t * 2


class Child(Base):
    kind = "child"

    def __init__(self, x):
        super().__init__(x * 2)

    def forward(self, y):
        return super().forward(y) + super(Child, self).forward(y) + len(self.kind)


def test_super_class_and_static_methods():
    def f(x):
        c = Child.make(x)
        return c.forward(x) + Base.twice(x) + c.twice(x), c.kind, Base.kind

    check_calls(f, *shapes((3,), (4,), (6,)), compiles=1)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a


def test_slots_and_missing_attribute():
    def f(x):
        s = Slotted(x)
        s.b = x + 1
        return s.a * s.b, hasattr(s, "zzz")

    check_calls(f, *shapes((2,), (3,)), compiles=1)


class Lazy:
    """__getattr__ and __getattribute__ in Python, a __setattr__ that renames."""

    aliases = {"width": "w"}

    def __init__(self, w):
        self.w = w

    def __getattribute__(self, key):
        if key != "aliases" and key in object.__getattribute__(self, "aliases"):
            key = object.__getattribute__(self, "aliases")[key]
        return super().__getattribute__(key)

    def __getattr__(self, key):
        if key.startswith("default_"):
            return 7
        raise AttributeError(key)

    def __setattr__(self, key, value):
        super().__setattr__(self.aliases.get(key, key), value)

    def __eq__(self, other):
        return type(other) is Lazy and vars(self) == vars(other)


def test_python_attribute_hooks_on_inputs_and_new_objects():
    def f(obj, x):
        obj.width = obj.w + 1        # stored through __setattr__: replayed after the graph
        fresh = Lazy(x)
        return x * obj.width + obj.default_scale + fresh.width

    calls = [(Lazy(2), torch.randn(3)), (Lazy(2), torch.randn(5)), (Lazy(4), torch.randn(5))]
    opt = check_calls(f, *calls)
    assert pdyn.stats(opt)["graph_breaks"] == 0


@dataclasses.dataclass
class Settings:
    scale: float
    names: list = dataclasses.field(default_factory=list)
    bias: float = 0.5


@dataclasses.dataclass(frozen=True)
class Frozen:
    k: int
    t: typing.Any = None


def test_dataclasses_made_in_the_trace_and_as_inputs():
    def f(cfg, x):
        s = Settings(2.0)
        s.names.append("a")
        fz = Frozen(3, x)
        return x * s.scale * cfg.scale + s.bias + fz.k + fz.t, len(s.names), cfg.bias

    calls = [(Settings(1.5), torch.randn(2)), (Settings(1.5), torch.randn(4)), (Settings(2.5), torch.randn(4))]
    check_calls(f, *calls, compiles=2)


Point = collections.namedtuple("Point", ["x", "y"])


class Pair(typing.NamedTuple):
    a: torch.Tensor
    b: int = 2

    def total(self):
        return self.a * self.b


def test_namedtuples_as_inputs_constructed_and_returned():
    def f(p, x):
        q = Point(x, p.y + 1)
        r = Pair(q.x)
        first, second = q
        return Point(r.total() + p.x, second), q[1], r._replace(b=3).b, first * 2, r._asdict()["b"]

    calls = [(Point(torch.randn(3), torch.randn(3)), torch.randn(3)),
             (Point(torch.randn(5), torch.randn(5)), torch.randn(5))]
    opt = check_calls(f, *calls, compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_namedtuple_class_defined_inside_the_function():
    def f(x):
        Local = collections.namedtuple("Local", "u v")
        return Local(x, x + 1).v

    check(f, torch.randn(3), graphs=1)


class Format(str, enum.Enum):
    NCHW = "nchw"
    NHWC = "nhwc"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Conv:
    def __init__(self, fmt, level):
        self.fmt = fmt
        self.level = level

    def __eq__(self, other):
        return type(other) is Conv and vars(self) == vars(other)


def test_str_and_int_enums_guarded_by_identity():
    def f(c, x):
        if c.fmt != Format.NCHW:
            x = x.t()
        if c.level >= Level.HIGH:
            x = x * 2
        return x + 1, c.fmt == "nchw", Format("nhwc") is Format.NHWC

    calls = [(Conv(Format.NCHW, Level.LOW), torch.randn(2, 3)), (Conv(Format.NCHW, Level.LOW), torch.randn(4, 3)),
             (Conv(Format.NHWC, Level.HIGH), torch.randn(4, 3))]
    check_calls(f, *calls, compiles=2)


def test_a_method_of_an_input_object_with_mutation_replayed():
    class Counter:
        def __init__(self):
            self.n = 0

        def bump(self, x):
            self.n += 1
            return x + self.n

    def f(c, x):
        return c.bump(x) + c.bump(x)

    counter = Counter()
    opt = pdyn.optimize(f, backend="eager")
    out = opt(counter, torch.zeros(2))
    assert counter.n == 2 and out.tolist() == [3.0, 3.0]
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_transformers_config_reads_without_a_break(caplog):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100)

    def f(cfg, x):
        y = x * cfg.hidden_size  # attribute_map: hidden_size -> n_embd
        if cfg._attn_implementation in (None, "eager", "sdpa") and cfg.return_dict and cfg.use_return_dict:
            y = y + 1
        return y

    backend = CountingBackend()
    opt = pdyn.optimize(f, backend=backend, fullgraph=True)
    for n in (3, 5):
        x = torch.randn(n)
        torch.testing.assert_close(opt(config, x), f(config, x))
    assert len(backend.graphs) == 1 and pdyn.stats(opt)["compiles"] == 1

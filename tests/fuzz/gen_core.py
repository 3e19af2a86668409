"""The generator's state: what variables exist (with each tensor's symbolic shape), a seeded RNG,
fresh names, and the small expression builders (sizes, ints, floats, conditions) the statement
makers in `gen_tensor.py` and `gen_python.py` share.

Shapes are tuples of dim strings: a symbol ("A", the same size in every tensor that has it in one
call), a number ("1", "3"), or an opaque "?k" that equals nothing else. Two tensors are combined
only where these say the op is valid, so most programs run without error eagerly.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Callable, Sequence, TypeVar

from tests.fuzz.program import Stmt

X = TypeVar("X")

# A branch on the sign of a float sum would follow rounding: sums that cancel exactly in math
# (`x @ linspace(-1, 1, 3)`) come out +-1e-7 depending on the summation order, which a fused
# kernel may change. A threshold away from 0 keeps such branches decided by the data.
FLOAT_THRESHOLD = 0.25


@dataclass
class Tensor:
    """A tensor variable. `shape` None: a parameter whose rank changes between calls."""

    name: str
    shape: tuple[str, ...] | None
    dtype: str = "f"  # "f" floating, "i" int64, "b" bool
    param: bool = False

    @property
    def rank(self) -> int:
        return -1 if self.shape is None else len(self.shape)


@dataclass
class Env:
    """Variables in scope, by kind. `sizes` maps a small non-negative int variable to the dim string
    it equals (opaque where it is arithmetic on sizes)."""

    tensors: list[Tensor] = field(default_factory=list)
    sizes: dict[str, str] = field(default_factory=dict)
    ints: list[str] = field(default_factory=list)
    floats: list[str] = field(default_factory=list)
    bools: list[str] = field(default_factory=list)
    strs: list[str] = field(default_factory=list)
    shapes: dict[str, int] = field(default_factory=dict)  # torch.Size variables and their rank
    lists: list[str] = field(default_factory=list)  # lists of ints
    dicts: list[str] = field(default_factory=list)  # dicts with str keys and number values
    others: list[str] = field(default_factory=list)  # returnable only: tuples, mixed dicts, ...
    accumulators: list[str] = field(default_factory=list)  # int locals loops may update


class Gen:
    """A seeded RNG, the environment, fresh names and the block depth."""

    def __init__(self, rng: random.Random, env: Env):
        self.rng = rng
        self.env = env
        self.counter = 0
        self.depth = 0  # nesting of if/for/while bodies
        self.body_table: Sequence[tuple[float, Maker]] = ()  # what block bodies draw from (generator.py)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def opaque(self) -> str:
        return self.fresh("?")

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq: Sequence[X]) -> X:
        return seq[self.rng.randrange(len(seq))]

    def snapshot(self) -> Env:
        return copy.deepcopy(self.env)

    # -- choosing variables --------------------------------------------------------------------

    def tensors(self, pred: Callable[[Tensor], bool] = lambda t: True) -> list[Tensor]:
        return [t for t in self.env.tensors if pred(t)]

    def tensor(self, pred: Callable[[Tensor], bool] = lambda t: True) -> Tensor | None:
        found = self.tensors(pred)
        return self.pick(found) if found else None

    def ranked(self, min_rank: int = 0, dtype: str = "f") -> Tensor | None:
        return self.tensor(lambda t: t.shape is not None and len(t.shape) >= min_rank and t.dtype == dtype)

    def add_tensor(self, name: str, shape: tuple[str, ...] | None, dtype: str = "f") -> None:
        self.env.tensors.append(Tensor(name, shape, dtype))

    def dim(self, t: Tensor) -> int:
        """A dim index of `t`, negative a third of the time."""
        rank = t.rank
        i = self.rng.randrange(rank)
        return i - rank if self.chance(0.33) else i

    # -- expressions -------------------------------------------------------------------------------

    def size_read(self, t: Tensor, i: int) -> str:
        """One of the ways Python reads a dim of `t`."""
        forms = [f"{t.name}.shape[{i}]", f"{t.name}.size({i})", f"{t.name}.size()[{i}]"]
        if i in (0, -t.rank):
            forms.append(f"len({t.name})")
        return self.pick(forms)

    def size_expr(self) -> tuple[str, str]:
        """A small int >= 0 and the dim string it equals (opaque for arithmetic)."""
        t = self.ranked(1) or self.ranked(1, "i")
        roll = self.rng.random()
        if t is not None and (roll < 0.5 or not self.env.sizes and roll < 0.9):
            i = self.dim(t)
            return self.size_read(t, i), t.shape[i]  # type: ignore[index]
        if self.env.sizes and roll < 0.88:
            name = self.pick(list(self.env.sizes))
            return name, self.env.sizes[name]
        if self.env.lists and roll < 0.93:
            return f"len({self.pick(self.env.lists)})", self.opaque()
        value = self.rng.randint(1, 4)
        return str(value), str(value)

    def small_int(self) -> str:
        """A small int >= 0 as an expression, possibly arithmetic on sizes."""
        base, _ = self.size_expr()
        return self.pick([base, base, f"({base} + 1)", f"({base} * 2)", f"({base} // 2)", f"min({base}, 4)",
                          f"max({base}, 1)", f"({base} % 3)"])

    def int_expr(self) -> str:
        """Any int: a size, an int variable, a literal, or arithmetic on them."""
        roll = self.rng.random()
        if self.env.ints and roll < 0.35:
            return self.pick(self.env.ints)
        if roll < 0.7:
            return self.size_expr()[0]
        if roll < 0.8:
            return str(self.pick([0, 1, 2, 3, -1, -2, 5, 7]))
        a, b = self.size_expr()[0], self.pick(self.env.ints) if self.env.ints else str(self.rng.randint(-3, 5))
        return self.pick([f"{a} - {b}", f"{a} + {b}", f"{a} * {b}", f"-{a}", f"abs({b})"])

    def float_expr(self) -> str:
        if self.env.floats and self.chance(0.6):
            return self.pick(self.env.floats)
        n = self.size_expr()[0]
        return self.pick([f"{n} / 2", f"float({n})", f"{n} * 0.5", "1.5", "-0.25", f"math.sqrt({n})",
                          f"{n} / 3"])

    def scalar_expr(self) -> str:
        """A Python number to combine with a tensor."""
        roll = self.rng.random()
        if roll < 0.4:
            return self.small_int()
        if roll < 0.6:
            return self.float_expr()
        if roll < 0.75 and self.env.ints:
            return self.pick(self.env.ints)
        if roll < 0.82 and self.env.bools:
            return self.pick(self.env.bools)
        return self.pick(["2", "0.5", "-1", "3.0", "1e-3"])

    def condition(self) -> str:
        """A bool for `if`/`while`: comparisons of sizes and ints, flags, shapes."""
        roll = self.rng.random()
        if self.env.bools and roll < 0.2:
            return self.pick(self.env.bools)
        if roll < 0.7:
            a = self.size_expr()[0]
            b = self.pick([str(self.rng.randint(0, 5)), self.size_expr()[0], self.int_expr()])
            return f"{a} {self.pick(['>', '<', '>=', '<=', '==', '!='])} {b}"
        if roll < 0.8:
            return f"{self.size_expr()[0]} % 2 == {self.rng.randint(0, 1)}"
        t = self.ranked(0)
        if t is not None and roll < 0.9:
            return self.pick([f"{t.name}.dim() == {len(t.shape or ())}",
                              f"{t.name}.numel() > {self.rng.randint(0, 12)}",
                              f"{t.name}.sum() > {FLOAT_THRESHOLD}", f"({t.name} > 0).any()"])
        if self.env.floats:
            return f"{self.pick(self.env.floats)} > {FLOAT_THRESHOLD}"
        return f"{self.int_expr()} > 0"

    def new_size(self, expr: str, dim: str | None = None) -> list[Stmt]:
        name = self.fresh("n")
        self.env.sizes[name] = dim or self.opaque()
        return [Stmt(f"{name} = {expr}")]

    def new_var(self, kind: str, expr: str) -> list[Stmt]:
        """`name = expr` registered under `kind` ("ints", "floats", "bools", "strs", "others", ...)."""
        name = self.fresh(kind[0])
        getattr(self.env, kind).append(name)
        return [Stmt(f"{name} = {expr}")]


Maker = Callable[[Gen], "list[Stmt] | None"]


def choose(g: Gen, table: Sequence[tuple[float, Maker]], tries: int = 20) -> list[Stmt]:
    """Statements from one maker of `table`, picked by weight (a maker may decline: None)."""
    weights = [w for w, _ in table]
    for _ in range(tries):
        (_, maker), = g.rng.choices(table, weights=weights)
        out = maker(g)
        if out:
            return out
    return []

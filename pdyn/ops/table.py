"""The op table's rows and the one function that maps an fx target to its row, `canonical`.

A row (`Op`) is one torch op under its canonical name, aten's where aten has one ("add",
"bitwise_xor_", "getitem"). Its spellings (`torch.add`, `Tensor.add`, `"add"`, `operator.add`,
`"__add__"`...) are declared in catalogue.py. A target nobody declared still has a row, derived on
first sight from aten's schemas and the name (`normal_` writes its first argument), with no shape
rule and no lowering; `declared` tells the two apart.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch
import torch.fx
import torch.nn.functional as F

from pdyn.ops import aten

# operator.iadd, ixor, imatmul, ...: each `i<name>` whose out-of-place `<name>` exists too
IN_PLACE_OPERATORS = frozenset(
    [getattr(operator, n) for n in dir(operator)
     if n.startswith("i") and (hasattr(operator, n[1:]) or hasattr(operator, n[1:] + "_"))]
    + [operator.setitem, operator.delitem])
PURE_OPERATORS = frozenset(getattr(operator, n) for n in dir(operator)
                           if callable(getattr(operator, n))) - IN_PLACE_OPERATORS
# Tensor.__iadd__, __ixor__, __idiv__, ...: each `__i<name>__` whose `__<name>__` exists too
IN_PLACE_DUNDERS = frozenset(n for n in dir(torch.Tensor)
                             if n.startswith("__i") and hasattr(torch.Tensor, "__" + n[3:]))

# torch namespaces whose functions change global state, touch devices or autograd, or do I/O.
UNTRACEABLE_MODULES = ("torch.cuda", "torch.distributed", "torch.autograd", "torch.jit", "torch.random",
                       "torch.utils", "torch.serialization", "torch.compiler", "torch._dynamo", "torch.backends",
                       "torch.hub", "torch.onnx", "torch.profiler", "torch.multiprocessing")
UNTRACEABLE_PREFIXES = ("set_", "manual_seed", "seed", "initial_seed", "save", "load", "use_deterministic",
                        "compile", "get_rng_state", "from_numpy", "is_grad_enabled", "is_inference_mode",
                        "autocast", "no_grad", "enable_grad", "inference_mode", "cond", "vmap")

DEFAULT_NAMESPACES = (torch, torch.Tensor, F)


@dataclass(frozen=True)
class Refusal:
    """Why tracing an op is refused: the Unsupported error's kind, its message (`{what}` is the
    call as the user wrote it, `Tensor.item()`), and a hint."""

    kind: str
    message: str
    hint: str = ""


@dataclass(eq=False)
class Op:
    """One row of the op table. `mutates` is the position of the argument the op writes (None:
    it writes nothing, unless a call passes `out=` or `inplace=True`); `data_dependent` says how
    its result depends on tensor values; `refused` is set where the tracer must not record it."""

    name: str
    mutates: int | None = None
    aten: str = ""                      # the name aten's schemas and tags are read under
    data_dependent: str | None = None
    refused: Refusal | None = None
    declared: bool = True
    random: bool | None = None          # None: aten's tags decide
    spellings: list[Any] = field(default_factory=list)

    @property
    def draws_random(self) -> bool:
        return aten.seeded(self.aten) if self.random is None else self.random

    @property
    def allocates(self) -> bool:
        """Whether the result is surely new memory (never an alias of an argument)."""
        return aten.allocates(self.aten)

    def __repr__(self) -> str:
        return f"Op({self.name})"

    # a row is one object: a copied graph's nodes name the same rows (tables are keyed by identity)
    def __copy__(self) -> Op:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Op:
        return self


OPS: dict[str, Op] = {}           # declared rows by name
SPELLINGS: dict[Any, Op] = {}     # declared spellings
_DERIVED: dict[Any, Op] = {}      # rows made for targets nobody declared, by target


def mutation_of_name(name: str) -> int | None:
    """The argument an op of this name writes: Tensor's in-place dunders, aten's schemas, and
    the convention that a trailing `_` is in place (`torch.nn.init.normal_`)."""
    if name in IN_PLACE_DUNDERS:
        return 0
    index = aten.writes(name)
    if index is not None:
        return index
    return 0 if name.endswith("_") and not name.startswith("_") else None


def declare(name: str, *, spellings: Iterable[Any] = (), namespaces: Iterable[Any] = DEFAULT_NAMESPACES,
            mutates: int | None | str = "by name", **columns: Any) -> Op:
    """The row `name` (made on first declaration) with `spellings`, the method string `name`, and
    each function of that name in `namespaces` not already spelling another row."""
    op = OPS.get(name)
    if op is None:
        op = OPS[name] = Op(name, mutation_of_name(name) if mutates == "by name" else mutates,  # type: ignore[arg-type]
                            aten=name)
    elif mutates != "by name":
        op.mutates = mutates  # type: ignore[assignment]
    for key, value in columns.items():
        setattr(op, key, value)
    for target in spellings:
        held = SPELLINGS.setdefault(target, op)
        assert held is op, f"{target} spells both {held.name} and {name}"
        op.spellings.append(target)
    for target in [name, *(getattr(ns, name, None) for ns in namespaces)]:
        if target is not None and target not in SPELLINGS:
            SPELLINGS[target] = op
            op.spellings.append(target)
    return op


def declare_all(names: Iterable[str], **options: Any) -> list[Op]:
    return [declare(name, **options) for name in names]


def row(name: str) -> Op:
    """The declared row `name`; a KeyError names a row nobody declared in catalogue.py."""
    return OPS[name]


def canonical(target: Any) -> Op:
    """The row of an fx target: a callable, a Tensor method's name, or an aten overload."""
    try:
        op = SPELLINGS.get(target) or _DERIVED.get(target)
    except TypeError:  # an unhashable target: derive it each time
        return _derive(target)
    if op is None:
        op = OPS.get(target) if isinstance(target, str) else None
        op = op or _derive(target)
        _DERIVED[target] = op
    return op


def op_of(node: torch.fx.Node) -> Op:
    """The row the tracer recorded on `node`, or its target's (for graphs built elsewhere)."""
    op = node.meta.get("op")
    return op if isinstance(op, Op) else canonical(node.target)


def _derive(target: Any) -> Op:
    """A row for a target nobody declared: named by where it lives, filled from aten and the name."""
    if isinstance(target, str):
        return Op(target, mutation_of_name(target), aten=target, declared=False)
    if isinstance(target, torch._ops.OpOverload):
        schema_name = target._schema.name.removeprefix("aten::")
        return Op(f"aten.{schema_name}.{target._overloadname}", aten.written_argument(target._schema),
                  aten=schema_name, declared=False, random=torch.Tag.nondeterministic_seeded in target.tags)
    short = getattr(target, "__name__", "") or ""
    module = getattr(target, "__module__", None) or ""
    name = f"{module}.{short}" if module else short or repr(target)
    if target in IN_PLACE_OPERATORS:
        mutates: int | None = 0
    elif target in PURE_OPERATORS:  # operator.and_, or_: the trailing `_` only avoids a keyword
        mutates = None
    else:
        mutates = mutation_of_name(short)
    refused = None
    if module.startswith(UNTRACEABLE_MODULES) or (module.startswith("torch") and short.startswith(UNTRACEABLE_PREFIXES)):
        refused = STATEFUL
    return Op(name, mutates, aten=short, declared=False, refused=refused)


STATEFUL = Refusal("torch_function", "cannot trace {what}: it changes state outside the tensors it is given",
                   hint="call it outside the compiled function")


# -- Python's operators: `x ^= 3` is `operator.ixor`, an int's `n += 1` is `n = n + 1` -------------

def in_place_operator(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`operator.iadd` for `operator.add`: what `a += b` calls."""
    return getattr(operator, "i" + fn.__name__.rstrip("_"))


def plain_operator(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`operator.add` for `operator.iadd` (immutable values: ints); other functions unchanged."""
    if fn not in IN_PLACE_OPERATORS or fn in (operator.setitem, operator.delitem):
        return fn
    plain = fn.__name__[1:]
    return getattr(operator, plain, None) or getattr(operator, plain + "_")


def is_in_place_operator(fn: Any) -> bool:
    """`operator.iadd`, `ixor`, ...: an augmented assignment, which may mutate its left operand."""
    try:
        return fn in IN_PLACE_OPERATORS and fn not in (operator.setitem, operator.delitem)
    except TypeError:
        return False

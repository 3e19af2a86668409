"""Random programs for differential fuzzing: `generate(seed)` is a `Program` (parameters, a
statement tree, returned expressions) plus 6-10 calls whose sizes and values change between calls.

Same seed, same program. Tensor parameters share size symbols ("A", "B") so their sizes change
together across calls; the statement makers (`gen_tensor.py`, `gen_python.py`) only combine
tensors whose symbolic shapes fit, so most programs run eagerly without error.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from tests.fuzz.gen_core import Env, Gen, Tensor, choose
from tests.fuzz.gen_python import BLOCK_EXTRA, PYTHON_MAKERS
from tests.fuzz.gen_tensor import TENSOR_MAKERS
from tests.fuzz.program import Program, T

INT_POOL = [0, 1, 2, 3, 4, 5, 7, -1, -3]
FLOAT_POOL = [0.5, 1.5, -2.25, 3.0, 0.0, -0.0, 1e-3, 2.0, -1.0]
RARE_FLOATS = [math.nan, math.inf, 2]  # 2: an int where a float was passed before


@dataclass
class Param:
    """One parameter: its name, kind ("tensor", "anyrank", "int", "float", "bool", "list", "dict",
    "tuple") and, for tensors, its symbolic dims and dtype."""

    name: str
    kind: str
    dims: tuple[str, ...] = ()
    dtype: str = "float32"


def generate(seed: int) -> Program:
    rng = random.Random(seed)
    symbols = ["A", "B", "C"][: rng.randint(1, 3)]
    params = make_params(rng, symbols)
    g = Gen(rng, env_of(params))
    g.body_table = TENSOR_MAKERS + PYTHON_MAKERS + BLOCK_EXTRA
    body = [s for _ in range(rng.randint(5, 14)) for s in choose(g, TENSOR_MAKERS + PYTHON_MAKERS)]
    returns = make_returns(g)
    style = rng.choices(["tuple", "single", "dict", "none"], weights=[60, 20, 15, 5])[0]
    calls = make_calls(rng, params, symbols)
    return Program([p.name for p in params], body, returns, calls, seed, style)


def make_params(rng: random.Random, symbols: list[str]) -> list[Param]:
    params = []
    floating = "float64" if rng.random() < 0.1 else "float32"  # one precision per program: matmuls need it
    for i in range(rng.choice([1, 2, 2, 3, 3])):
        rank = rng.choices([0, 1, 2, 3], weights=[3, 25, 45, 27])[0]
        dims = tuple(rng.choice(symbols) if rng.random() < 0.85 else rng.choice(["1", "3", "4"]) for _ in range(rank))
        dtype = "int64" if rng.random() < 0.07 else floating
        params.append(Param(f"x{i}", "tensor", dims, dtype))
    if rng.random() < 0.2:
        params.append(Param("r", "anyrank"))
    for kind, name, p in (("int", "k0", 0.5), ("int", "k1", 0.15), ("float", "fl", 0.35), ("bool", "flag", 0.25),
                          ("list", "items", 0.3), ("dict", "cfg", 0.25), ("tuple", "dims", 0.12)):
        if rng.random() < p:
            params.append(Param(name, kind))
    rng.shuffle(params)
    return params


def env_of(params: list[Param]) -> Env:
    env = Env()
    for p in params:
        if p.kind == "tensor":
            env.tensors.append(Tensor(p.name, p.dims, "i" if p.dtype == "int64" else "f", param=True))
        elif p.kind == "anyrank":
            env.tensors.append(Tensor(p.name, None, "f", param=True))
        else:
            kinds = {"int": env.ints, "float": env.floats, "bool": env.bools, "list": env.lists, "dict": env.dicts}
            if p.kind == "tuple":
                env.shapes[p.name] = 2
            else:
                kinds[p.kind].append(p.name)
    return env


def make_returns(g: Gen) -> list[str]:
    env = g.env
    pools: list[list[str]] = [[t.name for t in env.tensors[-4:]], list(env.sizes), env.ints, env.floats, env.bools,
                              env.strs, list(env.shapes), env.lists, env.others, env.dicts]
    t = g.tensor()
    if t is not None:
        pools.append([f"{t.name}.shape", f"{t.name}.size()", f"tuple({t.name}.shape)", f"{t.name}.dim()"])
    pools.append(["COUNTER", "len(LOG)"])
    pools = [p for p in pools if p]
    made = [t.name for t in env.tensors if not t.param]
    out: list[str] = []
    if env.tensors and g.chance(0.75):
        out.append(env.tensors[-1].name)  # the last tensor made: most of the work flows into it
    for _ in range(g.rng.randint(1, 5)):
        choice = g.pick(made) if made and g.chance(0.45) else g.pick(g.pick(pools))
        if choice not in out:
            out.append(choice)
    return out


# -- call sequences ----------------------------------------------------------------------------------------


def make_calls(rng: random.Random, params: list[Param], symbols: list[str]) -> list[tuple[Any, ...]]:
    """6-10 calls; sizes change one symbol at a time, repeat, or hit 0 and 1, so guards are crossed."""
    sizes = {s: rng.randint(2, 6) for s in symbols}
    state: dict[str, Any] = {}
    calls = []
    for c in range(rng.randint(6, 10)):
        if c > 0:
            evolve_sizes(rng, sizes)
        calls.append(tuple(arg_value(rng, p, sizes, state, c) for p in params))
    return calls


def evolve_sizes(rng: random.Random, sizes: dict[str, int]) -> None:
    roll = rng.random()
    sym = rng.choice(list(sizes))
    if roll < 0.25:
        return
    if roll < 0.6:
        sizes[sym] = rng.randint(2, 9)
    elif roll < 0.72:
        sizes[sym] = 1
    elif roll < 0.8:
        sizes[sym] = 0
    else:
        for s in sizes:
            sizes[s] = rng.randint(1, 8)


def arg_value(rng: random.Random, p: Param, sizes: dict[str, int], state: dict[str, Any], call: int) -> Any:
    """This call's value of `p`; scalars keep last call's value 65% of the time."""
    if p.kind == "tensor":
        return tensor_arg(rng, p, sizes)
    if p.kind == "anyrank":
        rank = state["rank"] = state.get("rank", rng.randint(1, 3)) if rng.random() < 0.7 else rng.randint(0, 3)
        return T(tuple(rng.randint(1, 4) for _ in range(rank)), seed=rng.randrange(10**6))
    if p.name in state and rng.random() < 0.65:
        value = state[p.name]
    else:
        value = state[p.name] = fresh_value(rng, p.kind)
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


def tensor_arg(rng: random.Random, p: Param, sizes: dict[str, int]) -> T:
    shape = tuple(sizes[d] if d in sizes else int(d) for d in p.dims)
    dtype = p.dtype
    if dtype != "int64" and rng.random() < 0.02:
        dtype = "float64" if dtype == "float32" else "float32"
    layout = "c"
    roll = rng.random()
    if len(shape) >= 2 and roll < 0.15:
        layout = "t"
    elif len(shape) >= 1 and roll < 0.22:
        layout = "s"
    return T(shape, dtype, rng.randrange(10**6), layout)


def fresh_value(rng: random.Random, kind: str) -> Any:
    if kind == "int":
        return rng.choice([True, False]) if rng.random() < 0.1 else rng.choice(INT_POOL)
    if kind == "float":
        return rng.choice(RARE_FLOATS) if rng.random() < 0.05 else rng.choice(FLOAT_POOL)
    if kind == "bool":
        return rng.choice([0, 1]) if rng.random() < 0.1 else rng.choice([True, False])
    if kind == "list":
        length = 0 if rng.random() < 0.1 else rng.randint(1, 4)
        return [rng.randint(-2, 6) for _ in range(length)]
    if kind == "dict":
        out: dict[str, Any] = {"a": rng.randint(0, 4)}
        if rng.random() < 0.8:
            out["b"] = rng.choice(FLOAT_POOL)
        return out
    assert kind == "tuple", kind
    return (rng.randint(0, 5), rng.randint(1, 5))

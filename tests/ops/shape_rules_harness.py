"""Checks a shape rule against torch's meta kernels, at the hints and at other values of the symbols.

`check_rule` runs `infer_sizes`, compares its sizes at the hints with the op run on meta tensors,
then draws other values for the symbols that keep every recorded guard true and compares again:
a rule that assumed something without a guard fails there.
"""

from __future__ import annotations

import random
from typing import Any

import sympy
import torch

from pdyn.ops.shape_rules import ShapeError, SymTensor, infer_sizes
from pdyn.sources import LocalSource
from pdyn.sources import SizeSource
from pdyn.shapes.shape_env import ShapeEnv


def sym_tensor(env: ShapeEnv, shape: tuple[int, ...], name: str, dtype: torch.dtype = torch.float32) -> SymTensor:
    """One symbol per dim (0 and 1 stay constants), read from `L[name].size(d)`."""
    sizes = tuple(env.create_symbol(n, SizeSource(LocalSource(name), d)) for d, n in enumerate(shape))
    return SymTensor(sizes, dtype)


def sym_int(env: ShapeEnv, value: int, name: str) -> sympy.Expr:
    return env.create_symbol(value, SizeSource(LocalSource(name), None))


def concrete(value: Any, values: dict, device: str = "meta") -> Any:
    """`value` with symbols replaced by `values` and SymTensors by meta tensors."""
    if isinstance(value, SymTensor):
        shape = [int(sympy.sympify(s).xreplace(values)) for s in value.sizes]
        return torch.zeros(shape, dtype=value.dtype, device=device)
    if isinstance(value, sympy.Expr):
        return int(value.xreplace(values))
    if isinstance(value, slice):
        return slice(*(concrete(v, values, device) for v in (value.start, value.stop, value.step)))
    if isinstance(value, (list, tuple)):
        return type(value)(concrete(v, values, device) for v in value)
    if isinstance(value, dict):
        return {k: concrete(v, values, device) for k, v in value.items()}
    return value


def run_meta(target: Any, args: tuple, kwargs: dict) -> list[tuple[int, ...]]:
    if isinstance(target, str):
        out = getattr(args[0], target)(*args[1:], **kwargs)
    else:
        out = target(*args, **kwargs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [tuple(t.shape) for t in outs]


def _eager_raises(target: Any, args: tuple, kwargs: dict, values: dict) -> bool:
    """Some meta kernels are laxer than CPU ones (max of an empty tensor): ask a real CPU tensor."""
    on_cpu = concrete(args, values, device="cpu"), concrete(kwargs, values, device="cpu")
    try:
        run_meta(target, *on_cpu)
    except Exception:  # noqa: BLE001 - any error of the op
        return True
    return False


def _evaluate(sizes: list[tuple[sympy.Expr, ...]], values: dict) -> list[tuple[int, ...]]:
    out = []
    for shape in sizes:
        dims = [sympy.sympify(s).xreplace(values) for s in shape]
        assert all(d.is_Integer for d in dims), f"{shape} is not an integer at {values}: {dims}"
        out.append(tuple(int(d) for d in dims))
    return out


def _other_values(env: ShapeEnv, rng: random.Random) -> dict | None:
    """Values for every symbol that keep all recorded guards, replacements and ranges, or None."""
    live = {}
    for sym in env.live_symbols():
        lo, hi = env.ranges[sym]
        lo = int(lo) if lo > -float("inf") else -9
        hi = int(hi) if hi < float("inf") else max(lo, 2) + 9
        live[sym] = sympy.Integer(rng.randint(lo, max(lo, hi)))
    values = {sym: env.simplify(sym).xreplace(live) for sym in env.hints}
    for guard in env.guards:
        if not bool(guard.expr.xreplace(values)):
            return None
    return values


def check_rule(env: ShapeEnv, target: Any, args: tuple, kwargs: dict | None = None, *, seed: int = 0,
               allow_none: bool = False) -> list | None:
    """infer_sizes matches meta at the hints and at other guard-satisfying values of the symbols."""
    kwargs = kwargs or {}
    hints = {sym: sympy.Integer(v) for sym, v in env.hints.items()}
    try:
        expected = run_meta(target, concrete(args, hints), concrete(kwargs, hints))
    except Exception:  # noqa: BLE001 - any error of the op
        expected = None
    try:
        got = infer_sizes(env, target, args, kwargs, None)
    except (ShapeError, AssertionError):
        assert expected is None or _eager_raises(target, args, kwargs, hints), f"rule raised, meta gave {expected}"
        return None
    if got is None:
        assert allow_none or expected is None, f"no rule result for {target}"
        return None
    assert expected is not None, f"meta raised, rule gave {got}"
    assert _evaluate(got, hints) == expected
    rng = random.Random(seed)
    for _ in range(6):
        values = _other_values(env, rng)
        if values is None:
            continue
        try:
            again = run_meta(target, concrete(args, values), concrete(kwargs, values))
        except Exception as error:  # noqa: BLE001
            raise AssertionError(f"guards hold at {values} but the op raises: {error}; guards {env.guards}")
        assert _evaluate(got, values) == again, f"at {values}; guards {env.guards}"
    return got


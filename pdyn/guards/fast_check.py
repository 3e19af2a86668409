"""The fast guard check of an entry: what the cache loop calls on every call. It accepts and rejects
exactly as the full check (the function the guard source shows) and, whenever it finds a failure,
returns what the full check returns, so the recompile log names the same guard.

It has the full check's bindings and conditions, save that the dtype, device, sizes and strides of
a model's weights are checked in one call at its end (tensor_batch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from pdyn.guards.guards import Guard
from pdyn.guards.tensor_guards import TensorGuard
from pdyn.guards.tensor_batch import TensorBatch

@dataclass
class Step:
    """A binding (`name = text`) or a check (fails when `text` is true) of the generated body."""

    kind: str                  # "bind" or "check"
    text: str
    name: str = ""
    sentence: str = ""
    comment: str = ""
    guard: Guard | None = None
    batched: bool = False      # a tensor's value check, made by the batch in the fast check
    value: str = ""            # the bound name of the checked tensor (batched checks)
    screen: str = ""           # more the fast check rejects here, for the batch's sake


def full_body(steps: list[Step]) -> list[str]:
    body: list[str] = []
    for step in steps:
        if step.kind == "bind":
            body.append(f"{step.name} = {step.text}")
        else:
            body += [f"if {step.text}:{step.comment}", f"    return {step.sentence!r}"]
    return body


@dataclass
class FastCheck:
    check: Callable[[dict[str, Any], dict[str, Any]], Any]
    source: str
    tensors: TensorBatch


def make(steps: list[Step], fresh: Callable[[str], str], hoist: Callable[[Any, str], str],
         scope: dict[str, Any], title: str, function: Callable[..., str], full: Callable[..., Any],
         publish: Callable[[dict[str, Any]], None]) -> FastCheck | None:
    """The fast check over `steps` in `scope` (the full check's constants), or None where it would
    be the full check itself (no tensor to batch). `hoist` names constants as the full check does;
    `publish` copies those made since into a scope."""
    batched = _batched(steps)
    if not batched:
        return None
    full_name, batch_name, predicate, missed = (fresh(n) for n in ("_full", "_tensors", "_tensors_py", "_missed"))
    scope[full_name] = full
    fail = f"{full_name}(L, G)"
    body = _lines([s for s in steps if s.kind == "bind" or not s.batched], fail)
    body += [f"if not {batch_name}({', '.join(v for v, _ in batched)}):", f"    return {missed}(L, G)"]
    source = function("check", body, fail, _predicate(batched, predicate, hoist))
    publish(scope)
    exec(compile(source, f"<pdyn fast guards {title}>", "exec"), scope)
    tensors = TensorBatch([g for _, g in batched], scope[predicate], scope, batch_name, full)
    scope[missed] = tensors.missed
    return FastCheck(check=scope["check"], source=source, tensors=tensors)


def _batched(steps: list[Step]) -> list[tuple[str, TensorGuard]]:
    out: dict[int, tuple[str, TensorGuard]] = {}
    for s in steps:
        if s.kind == "check" and s.batched:
            out.setdefault(id(s.guard), (s.value, s.guard))  # type: ignore[arg-type]
    return list(out.values())


def _lines(steps: list[Step], fail: str) -> list[str]:
    body: list[str] = []
    for step in steps:
        if step.kind == "bind":
            body.append(f"{step.name} = {step.text}")
        else:
            body += [f"if {step.text}{step.screen}:", f"    return {fail}"]
    return body


def _predicate(batched: list[tuple[str, TensorGuard]], name: str, hoist: Callable[[Any, str], str]) -> list[str]:
    """The batch's Python conditions, as a function of the tensors."""
    args = [f"t{i}" for i in range(len(batched))]
    conds = [cond for (_, g), a in zip(batched, args) for cond, _ in g.value_checks(a, hoist)]
    return [f"def {name}({', '.join(args)}):", f"    return not ({' or '.join(conds)})"]

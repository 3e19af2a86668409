"""GuardSet -> one generated Python function `check(L, G)` and its readable source.

`check` returns None when every guard holds, else the sentence of the first that failed. Each
source is read once into a local name; objects are hoisted into named constants; each check
carries a comment with the user line that made it.
"""

from __future__ import annotations

import keyword
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable

from pdyn.guards import AliasGuard, Guard, GuardSet
from pdyn.sources import AttrSource, DefaultSource, ItemSource, Source

CheckFn = Callable[[dict[str, Any], dict[str, Any]], "str | None"]


@dataclass
class GuardCode:
    """A compiled guard function, its source text, and the guards behind each sentence."""

    check: CheckFn
    source: str
    by_sentence: dict[str, Guard]


class _Namer:
    """Local names for sources and constants, unique and always valid identifiers."""

    def __init__(self) -> None:
        self.taken: set[str] = {"L", "G", "check"}
        self.consts: dict[Any, tuple[str, Any]] = {}

    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W+", "_", hint).rstrip("_") or "v"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "v_" + base
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def hoist(self, obj: Any, hint: str) -> str:
        try:
            key: Any = ("value", type(obj), obj) if not callable(obj) else ("id", id(obj))
            hash(key)
        except TypeError:
            key = ("id", id(obj))
        if key not in self.consts:
            self.consts[key] = (self.fresh("_" + hint.lstrip("_")), obj)
        return self.consts[key][0]


def _source_hint(src: Source) -> str:
    if isinstance(src, AttrSource):
        return f"{_source_hint(src.base)}_{src.attr}"
    if isinstance(src, (ItemSource, DefaultSource)):
        return f"{_source_hint(src.base)}_{src.index}"
    return getattr(src, "name", "v")


def _rebase(src: Source, bound: dict[Source, str]) -> str:
    """`src` as an expression that starts from the nearest already-bound name."""
    if src in bound:
        return bound[src]
    if isinstance(src, AttrSource):
        base = _rebase(src.base, bound)
        return f"{base}.{src.attr}" if src.attr.isidentifier() else f"getattr({base}, {src.attr!r})"
    if isinstance(src, ItemSource):
        return f"{_rebase(src.base, bound)}[{src.index!r}]"
    if isinstance(src, DefaultSource):
        attr = "__kwdefaults__" if isinstance(src.index, str) else "__defaults__"
        return f"{_rebase(src.base, bound)}.{attr}[{src.index!r}]"
    return src.expr()


def build(guards: GuardSet, title: str) -> GuardCode:
    """Generate, compile and return the check function for `guards`; `title` heads the source."""
    namer = _Namer()
    bound: dict[Source, str] = {}
    body: list[str] = []
    by_sentence: dict[str, Guard] = {}

    def bind(src: Source) -> str:
        if src not in bound:
            expr = _rebase(src, bound)
            name = namer.fresh(_source_hint(src))
            body.append(f"    {name} = {expr}")
            bound[src] = name
        return bound[src]

    for guard in guards:
        if isinstance(guard, AliasGuard):
            op = "is not" if guard.same else "is"
            cond = f"{bind(guard.source)} {op} {bind(guard.other)}"  # type: ignore[arg-type]
        else:
            v = bind(guard.source) if guard.source is not None else ""
            cond = guard.fail_expr(v, namer.hoist)
        sentence = guard.sentence()
        by_sentence.setdefault(sentence, guard)
        comment = f"  # {guard.loc}  {guard.loc.source_line().strip()}" if guard.loc else ""
        body.append(f"    if {cond}:{comment}")
        body.append(f"        return {sentence!r}")
    consts = sorted(namer.consts.values())
    header = [f"# pdyn guards for {title}"]
    if consts:
        header.append("# constants: " + ", ".join(f"{n} = {_short_repr(o)}" for n, o in consts))
    lines = header + ["def check(L, G):", "    try:"]
    lines += ["    " + line for line in body] if body else ["        pass"]
    lines += [
        "    except Exception as e:  # an attribute or item that is gone: the entry does not apply",
        "        return f'a guard raised {type(e).__name__}: {e}'",
        "    return None",
    ]
    source = "\n".join(lines) + "\n"
    scope: dict[str, Any] = {name: obj for name, obj in consts}
    scope["_modules"] = sys.modules  # ModuleSource roots: globals of functions from other modules
    exec(compile(source, f"<pdyn guards {title}>", "exec"), scope)
    return GuardCode(check=scope["check"], source=source, by_sentence=by_sentence)


def _short_repr(obj: Any) -> str:
    if isinstance(obj, type):
        return f"{obj.__module__}.{obj.__qualname__}"
    text = (getattr(obj, "__qualname__", None) or repr(obj)).splitlines()[0]
    return text if len(text) <= 60 else text[:57] + "..."

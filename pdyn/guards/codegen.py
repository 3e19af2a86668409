"""GuardSet -> the generated Python function `check(L, G)` and its readable source.

`check` returns None when every guard holds, else the sentence of the first that failed. Each
source is read once into a local name; objects are hoisted into named constants; each check
carries a comment with the user line that made it. Where a model's weights are guarded, the
function the cache calls is the fast check (fast_check.py) over the same steps, with this full
check behind it for every failure.
"""

from __future__ import annotations

import keyword
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable

from pdyn.guards import fast_check
from pdyn.guards.fast_check import Step, full_body
from pdyn.guards.guards import Guard, GuardSet
from pdyn.guards.tensor_guards import TensorGuard
from pdyn.guards.tensor_batch import TensorBatch, batchable
from pdyn.sources import AttrSource, DefaultSource, ItemSource, LocalSource, Source

SYMBOL = re.compile(r"[su]\d+")
CheckFn = Callable[[dict[str, Any], dict[str, Any]], "str | None"]


@dataclass
class GuardCode:
    """A compiled guard function, its source text, and the guards behind each sentence. `check`
    accepts and rejects exactly as `full_check` (the function `source` shows) and returns its
    sentence; it only finds a pass faster."""

    check: CheckFn
    source: str
    by_sentence: dict[str, Guard]
    full_check: CheckFn | None = None     # the function `source` shows; `check` itself where no batch
    fast_source: str = ""
    tensors: TensorBatch | None = None


class _Namer:
    """Local names for sources and constants, unique and always valid identifiers."""

    def __init__(self) -> None:
        # `_modules` is in every guard's scope; `e` names the exception caught
        self.taken: set[str] = {"L", "G", "check", "e", "_modules"}
        self.consts: dict[Any, tuple[str, Any]] = {}

    def fresh(self, hint: str) -> str:
        base = re.sub(r"[\W_]+", "_", hint).rstrip("_") or "v"  # no `__x` names in generated code
        if base[0].isdigit() or keyword.iskeyword(base) or SYMBOL.fullmatch(base):
            base = "v_" + base  # `s0`, `u1`, ... are size symbols, bound by shape guards with `:=`
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def hoist(self, obj: Any, hint: str) -> str:
        # NOTE: by identity: equal values may differ (0.0 and -0.0, 1 and True, (1,) and (True,));
        # `consts` keeps each object alive, so no id is reused while the function is built
        key = id(obj)
        if key not in self.consts:
            self.consts[key] = (self.fresh("_" + hint.lstrip("_")), obj)
        return self.consts[key][0]


def _source_hint(src: Source) -> str:
    if isinstance(src, AttrSource):
        return f"{_source_hint(src.base)}_{src.attr}"
    if isinstance(src, (ItemSource, DefaultSource)):
        return f"{_source_hint(src.base)}_{src.index}"
    return getattr(src, "name", "v")


def origin(guard: Guard) -> str:
    """Where `guard` came from: `file:line  the user line`, or, for a value read at the frame's entry
    (no instruction yet, so no column), `argument of f() at file:line`; "" when unknown."""
    loc = guard.loc
    if loc is None:
        return ""
    root = guard.source.root() if guard.source is not None else None
    if loc.col is None and isinstance(root, LocalSource):
        return _printable(f"argument of {loc.function or 'the frame'}() at {loc}")
    line = loc.source_line().strip()
    return _printable(f"{loc}  {line}" if line else str(loc))


def _comment(guard: Guard) -> str:
    text = origin(guard)
    return f"  # {text}" if text else ""


def _printable(text: str) -> str:
    """Comment text that cannot end the comment: control characters are escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def build(guards: GuardSet, title: str) -> GuardCode:
    """Generate, compile and return the check functions for `guards`; `title` heads the source:
    the full check, which names the first guard that fails, and the fast check the cache calls
    (fast_check), which accepts and rejects as the full one and returns its sentence."""
    namer = _Namer()
    bound: dict[Source, str] = {}
    steps: list[Step] = []
    by_sentence: dict[str, Guard] = {}

    def bind(src: Source) -> str:
        if src not in bound:
            expr = src.code(namer.hoist, bound)  # from the nearest source already bound
            name = namer.fresh(_source_hint(src))
            steps.append(Step("bind", expr, name=name))
            bound[src] = name
        return bound[src]

    for guard in guards:
        comment = _comment(guard)
        if isinstance(guard, TensorGuard) and batchable(guard):
            v = bind(guard.source)  # type: ignore[arg-type]
            inline = [guard.type_check(v, namer.hoist)] + guard.layout_checks(v)
            checks = guard.checks(v, namer.hoist)
        else:
            v, inline = "", []
            checks = guard.bound_checks(bind, namer.hoist)
        for cond, sentence in checks:
            by_sentence.setdefault(sentence, guard)
            batched = bool(v) and (cond, sentence) not in inline
            # torch's C check aborts the process on a nested tensor's strides: screened out before it
            screen = f" or {v}.is_nested" if v and (cond, sentence) == inline[0] else ""
            steps.append(Step("check", cond, sentence=sentence, comment=comment, guard=guard, batched=batched,
                              value=v, screen=screen))
    code = _assemble(title, full_body(steps), sorted(namer.consts.values()), by_sentence)
    scope = dict(code.check.__globals__)

    def publish(into: dict[str, Any]) -> None:
        into.update(namer.consts.values())

    fast = fast_check.make(steps, namer.fresh, namer.hoist, scope, title, _function, code.check, publish)
    if fast is None:
        return code
    return GuardCode(check=fast.check, source=code.source, by_sentence=by_sentence, full_check=code.check,
                     fast_source=fast.source, tensors=fast.tensors)


def _assemble(title: str, body: list[str], consts: list[tuple[str, Any]],
              by_sentence: dict[str, Guard]) -> GuardCode:
    header = [f"# pdyn guards for {_printable(title)}"]
    if consts:
        header.append("# constants: " + ", ".join(f"{n} = {_short_repr(o)}" for n, o in consts))
    source = "\n".join(header) + "\n" + _function("check", body, "f'a guard raised {type(e).__name__}: {e}'")
    scope: dict[str, Any] = {name: obj for name, obj in consts}
    scope["_modules"] = sys.modules  # ModuleSource roots: globals of functions from other modules
    exec(compile(source, f"<pdyn guards {title}>", "exec"), scope)
    return GuardCode(check=scope["check"], source=source, by_sentence=by_sentence, full_check=scope["check"])


def _function(name: str, body: list[str], on_error: str, extra: tuple[str, ...] | list[str] = ()) -> str:
    lines = list(extra) + [f"def {name}(L, G):", "    try:"]
    lines += [f"        {line}" for line in body] if body else ["        pass"]
    lines += [
        "    except Exception as e:  # an attribute or item that is gone: the entry does not apply",
        f"        return {on_error}",
        "    return None",
    ]
    return "\n".join(lines) + "\n"


def _short_repr(obj: Any) -> str:
    text = _printable(_name_of(obj))
    return text if len(text) <= 60 else text[:57] + "..."


def _name_of(obj: Any) -> str:
    if type(obj) is tuple and any(isinstance(item, type) for item in obj):  # key types: (str, int)
        return "(" + ", ".join(map(_name_of, obj)) + ("," if len(obj) == 1 else "") + ")"
    qualname, module = getattr(obj, "__qualname__", None), getattr(obj, "__module__", None)
    if isinstance(qualname, str) and isinstance(module, str):
        return qualname if module == "builtins" else f"{module}.{qualname}"
    return repr(obj)

"""How fast the ShapeEnv reasons as programs grow: 1,000 guards over 500 symbols, built, recorded
(each a bool read with its hint evaluated), simplified after specializations, and printed as Python.

    python benchmarks/shape_env.py [--validate] [--record]

--record: with the step record of `pdyn.debug.bisect` active (off, it costs one global read a step).
"""

import contextlib
import random
import time

import sympy

from pdyn.sources import LocalSource
from pdyn.shapes import steps
from pdyn.shapes.shape_env import ShapeEnv, to_python
from pdyn.shapes.validation import Validator
from pdyn.sources import SizeSource as SymbolOrigin


def main(n_symbols: int = 500, n_guards: int = 1000, validate: bool = False) -> None:
    rng = random.Random(0)
    env = ShapeEnv(validator=Validator() if validate else None)
    start = time.perf_counter()
    syms = [env.create_symbol(rng.randint(2, 4096), SymbolOrigin(LocalSource(f"x{i // 4}"), i % 4))
            for i in range(n_symbols)]
    t_symbols = time.perf_counter() - start

    start = time.perf_counter()
    for i in range(n_guards):
        a, b = syms[rng.randrange(n_symbols)], syms[rng.randrange(n_symbols)]
        kind = i % 4
        if kind == 0:
            expr = sympy.Gt(a * b + 3, 8, evaluate=False)
        elif kind == 1:
            expr = sympy.Eq(sympy.Mod(a * b, 8, evaluate=False), 0, evaluate=False)
        elif kind == 2:
            expr = sympy.Le(a + 2 * b, 9000, evaluate=False)
        else:
            expr = sympy.Lt(a, 5000, evaluate=False)
        env.evaluate_bool(expr, None, "benchmark")
    t_guards = time.perf_counter() - start

    start = time.perf_counter()
    for sym in syms[:50]:
        env.specialize(sym, None, "benchmark")
    simplified = [env.simplify(g.expr) for g in env.guards]
    t_simplify = time.perf_counter() - start

    start = time.perf_counter()
    source = [to_python(e) for e in simplified]
    t_print = time.perf_counter() - start

    total = t_symbols + t_guards + t_simplify + t_print
    print(f"{n_symbols} symbols: {t_symbols * 1e3:.1f} ms")
    print(f"{n_guards} bool reads -> {len(env.guards)} guards recorded: {t_guards * 1e3:.1f} ms")
    print(f"50 specializations + simplifying {len(simplified)} guards: {t_simplify * 1e3:.1f} ms")
    print(f"printing {len(source)} guards as Python: {t_print * 1e3:.1f} ms")
    print(f"total: {total * 1e3:.1f} ms")


if __name__ == "__main__":
    import sys

    with steps.recording(steps.StepRecord()) if "--record" in sys.argv else contextlib.nullcontext():
        main(validate="--validate" in sys.argv)   # --validate: with translation validation (z3) on

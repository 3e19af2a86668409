"""Statement makers for the Python around the tensors: size reads in every spelling, int/float/bool
arithmetic on them, strings, containers indexed by sizes, if/for/while on sizes, side effects on
arguments and globals, graph breaks, and code that raises for some sizes.

Block makers (if/for/while) draw their bodies from `g.body_table` and forget the variables the body
defined, so later statements only use names that exist on every path.
"""

from __future__ import annotations

from tests.fuzz.gen_core import Gen, choose
from tests.fuzz.program import Stmt


def size_read(g: Gen) -> list[Stmt] | None:
    t = g.tensor(lambda t: t.rank != 0)
    if t is None:
        return None
    if t.shape is None:
        return g.pick([lambda: g.new_size(f"{t.name}.dim()"), lambda: g.new_size(f"len({t.name}.shape)"),
                       lambda: g.new_var("ints", f"{t.name}.numel()"), lambda: _shape_var(g, f"{t.name}.shape", -1)])()
    roll = g.rng.random()
    if roll < 0.55:
        i = g.dim(t)
        return g.new_size(g.size_read(t, i), t.shape[i])
    if roll < 0.65 and t.rank == 2:
        a, b = g.fresh("n"), g.fresh("n")
        g.env.sizes[a], g.env.sizes[b] = t.shape
        return [Stmt(f"{a}, {b} = {t.name}.shape")]
    if roll < 0.7:
        last = g.fresh("n")
        g.env.sizes[last] = t.shape[-1]
        return [Stmt(f"*_, {last} = {t.name}.size()")]
    if roll < 0.8:
        return g.new_size(g.pick([f"{t.name}.dim()", f"{t.name}.ndim", f"len({t.name}.shape)"]))
    if roll < 0.9:
        return g.new_var("ints", g.pick([f"{t.name}.numel()", f"{t.name}.shape.numel()", f"math.prod({t.name}.shape)"]))
    if g.chance(0.3):
        return _shape_var(g, f"{t.name}.shape[1:]", t.rank - 1)
    return _shape_var(g, g.pick([f"{t.name}.shape", f"{t.name}.size()"]), t.rank)


def _shape_var(g: Gen, expr: str, rank: int) -> list[Stmt]:
    name = g.fresh("sh")
    g.env.shapes[name] = rank
    return [Stmt(f"{name} = {expr}")]


def shape_use(g: Gen) -> list[Stmt] | None:
    known = [s for s, r in g.env.shapes.items() if r >= 1]
    if not known:
        return None
    sh = g.pick(known)
    i = g.rng.randrange(g.env.shapes[sh])
    t = g.tensor(lambda t: t.rank >= 0)
    options = [lambda: g.new_size(f"{sh}[{i}]"), lambda: g.new_var("others", f"list({sh})"),
               lambda: g.new_var("strs", f"str({sh})"), lambda: g.new_size(f"len({sh})"),
               lambda: g.new_var("others", f"tuple({sh})"), lambda: g.new_var("others", f"{sh}[::-1]"),
               lambda: g.new_var("bools", f"{sh} == {t.name}.shape" if t else f"{sh} == ()"),
               lambda: g.new_var("others", f"torch.Size([{g.small_int()}, {sh}[{i}]])"),
               lambda: g.new_var("ints", f"sum({sh})")]
    return g.pick(options)()


def _denominator(g: Gen) -> str:
    """Mostly never zero; sometimes a size or int that is zero on some calls."""
    n = g.size_expr()[0]
    roll = g.rng.random()
    if roll < 0.35:
        return str(g.pick([2, 3, -2, 4]))
    if roll < 0.75:
        return g.pick([f"({n} + 1)", f"max({n}, 1)"])
    if roll < 0.92:
        return n
    return g.int_expr()


def int_arith(g: Gen) -> list[Stmt] | None:
    a, b = g.size_expr()[0], g.size_expr()[0]
    roll = g.rng.random()
    if roll < 0.3:
        return g.new_size(g.pick([f"{a} + {b}", f"{a} + 1", f"min({a}, {b})", f"max({a}, {b})", f"abs({a} - {b})",
                                  f"{a} // {_denominator(g)}" if g.chance(0.5) else f"{a} % {_denominator(g)}",
                                  f"({a} + 3) // 4 * 4" if g.chance(0.5) else f"{a} & 3", f"{a} >> 1"]))
    k = g.int_expr()
    options = [f"{a} * {b}", f"{a} - {b}", f"{k} // {_denominator(g)}", f"{k} % {_denominator(g)}",
               f"-{a} // 3", f"{k} % -3", f"{a} ** 2", f"{a} ** ({k} % 3)", f"{a} << 2", f"{a} ^ {b}", f"~{a}",
               f"{a} | 1", f"int({a} / {_denominator(g)})", f"round({a} / 3)", f"math.floor({a} / 2)",
               f"math.ceil({a} / 3)", f"math.gcd({a}, {b})", f"{k} * {a} - {b}", f"True + {a}", f"divmod({a}, 3)[0]",
               f"{a} ** {k}" if g.chance(0.2) else f"{a} * 2", f"math.isqrt({a})", f"int(math.log2({a} + 1))"]
    return g.new_var("ints", g.pick(options))


def float_arith(g: Gen) -> list[Stmt] | None:
    a = g.size_expr()[0]
    f = g.float_expr()
    options = [f"{a} / {_denominator(g)}", f"float({a})", f"math.sqrt({a})", f"math.log({a} + 1)", f"math.exp({a} / 4)",
               f"{a} * math.pi", f"math.cos({a})", f"{f} * {a}", f"-{f}", f"{f} * 0", f"{f} + 0.0", f"abs({f})",
               f"math.copysign(1.0, {f})", f"{f} // 1", f"{f} % 1.0", f"math.fabs({f})", f"round({f}, 1)",
               f"{a} ** -1" if g.chance(0.3) else f"{a} ** 0.5", f"math.hypot({a}, {f})", f"{f} ** 2", f"min({f}, {a})",
               f"1 / {_denominator(g)}", f"math.atan2({f}, {a})", f"{f} * -1.0", f"math.log2({a} + 1)",
               f"{a} / 3 * 3", f"float({a}) ** 2", f"({a} + 0.5) // 1", f"round({a} / 3, 2)", f"{a} * 1.5 - {f}",
               f"math.floor({a} * 1.5) / 2", f"math.tau * {a} / 7",
               f"{a} / {g.size_expr()[0]} if {g.condition()} else {f}"]
    if g.chance(0.1):
        options += [f"math.sqrt({f})", f"math.log({f})"]  # ValueError for some values
    return g.new_var("floats", g.pick(options))


def float_to_int(g: Gen) -> list[Stmt] | None:
    f = g.float_expr()
    return g.new_var("ints", g.pick([f"int({f})", f"round({f})", f"math.floor({f})", f"math.ceil({f})",
                                     f"math.trunc({f})", f"int({f} * 10) // 3"]))


def compare(g: Gen) -> list[Stmt] | None:
    a, b = g.size_expr()[0], g.int_expr()
    t, u = g.tensor(), g.tensor()
    k = g.pick(g.env.ints) if g.env.ints else a
    options = [f"{a} > {b}", f"{a} == {b}", f"0 < {a} <= {g.size_expr()[0]}", f"not {g.condition()}",
               f"{a} in (1, 2, 3)", f"type({k}) is int", f"isinstance({k}, bool)", f"{a} != {b}",
               f"{g.condition()} and {a} > 1", f"{a} > 1 or {g.condition()}", f"bool({a})"]
    if t is not None and u is not None:
        options += [f"{t.name}.shape == {u.name}.shape", f"{t.name}.shape[1:] == {u.name}.shape[1:]",
                    f"{t.name}.size() != {u.name}.size()"]
    if g.env.bools:
        options.append(f"{g.pick(g.env.bools)} + {a}")
    return g.new_var("bools", g.pick(options))


def to_str(g: Gen) -> list[Stmt] | None:
    a, b = g.size_expr()[0], g.int_expr()
    options = [f'f"{{{a}}}x{{{b}}}"', f"str({a})", f'str({a}) + "_" + str({b})', f'"-" * ({a} % 4)',
               f'NAMES.get({a}, "many")', f'"%d-%d" % ({a}, {b})', f'"{{}}:{{}}".format({a}, {b})', f"repr({a} / 2)"]
    t = g.tensor()
    if t is not None:
        options += [f"str({t.name}.shape)", f'f"{{{t.name}.shape}}"', f"repr({t.name}.size())",
                    f'",".join(str(d) for d in {t.name}.shape)', f"str(list({t.name}.shape))", f"str({t.name}.dtype)",
                    f'f"{{{t.name}.dim()}}d"']
    if g.env.floats:
        f = g.pick(g.env.floats)
        options += [f'f"{{{f}:.3f}}"', f"str({f})", f"repr({f})", f'f"{{{f}}}"']
    if g.env.bools:
        options.append(f"str({g.pick(g.env.bools)})")
    if g.env.strs and g.chance(0.3):
        options.append(f"{g.pick(g.env.strs)} + {g.pick(g.env.strs)}")
    return g.new_var("strs", g.pick(options))


def containers(g: Gen) -> list[Stmt] | None:
    a, b = g.size_expr()[0], g.int_expr()
    t = g.tensor(lambda t: t.rank >= 1)
    lists = g.env.lists
    options = [lambda: g.new_var("lists", f"[{a}, {b}]"), lambda: g.new_var("ints", f"TABLE[{a} % len(TABLE)]"),
               lambda: g.new_var("ints", f"TABLE[{a}]"), lambda: g.new_var("lists", f"list(range({g.small_int()}))"),
               lambda: g.new_var("others", f'{{{a}: "a", {b}: "b"}}'),
               lambda: g.new_var("dicts", f'{{"n": {a}, "m": {b}}}'),
               lambda: g.new_var("others", f"({a}, {b})"), lambda: g.new_var("strs", f'NAMES.get({a}, "many")'),
               lambda: g.new_var("lists", f"[0] * {g.small_int()}"), lambda: g.new_var("others", f"divmod({a}, 3)")]
    if t is not None:
        n = t.name
        options += [lambda: g.new_var("lists", f"list({n}.shape)"),
                    lambda: g.new_var("lists", f"[d * 2 for d in {n}.shape]"),
                    lambda: g.new_var("lists", f"sorted({n}.shape)"), lambda: g.new_var("others", f"tuple({n}.shape)"),
                    lambda: g.new_var("others", f"{{d: i for i, d in enumerate({n}.shape)}}"),
                    lambda: g.new_var("bools", f"any(d == 1 for d in {n}.shape)"),
                    lambda: g.new_var("ints", f"sum({n}.shape)"), lambda: g.new_size(f"max({n}.shape)")]
    if lists:
        lst = g.pick(lists)
        options += [lambda: g.new_size(f"len({lst})"), lambda: g.new_var("ints", f"{lst}[{a} % max(len({lst}), 1)]"),
                    lambda: g.new_var("ints", f"sum({lst})"), lambda: g.new_var("lists", f"{lst} + [{a}]"),
                    lambda: g.new_var("ints", f"{lst}[-1]" if g.chance(0.3) else f"{lst}[0] if {lst} else -1"),
                    lambda: g.new_var("lists", f"{lst}[1:]"), lambda: g.new_var("ints", f"{lst}.count({a})")]
    if g.env.dicts:
        d = g.pick(g.env.dicts)
        options += [lambda: g.new_var("ints", f'{d}["n"] * {a}' if d != "cfg" else f'{d}["a"] * {a}'),
                    lambda: g.new_var("floats", f'{d}.get("b", 0.5)'), lambda: g.new_var("others", f"{d}.get({a}, -1)"),
                    lambda: g.new_size(f"len({d})")]
    return g.pick(options)()


def side_effect(g: Gen) -> list[Stmt] | None:
    a = g.size_expr()[0]
    t = g.tensor()
    options = [f"COUNTER += 1", f"COUNTER += {a}", f"LOG.append({a})"]
    if t is not None:
        options += [f"LOG.append(str({t.name}.shape))", f"LOG.extend({t.name}.shape)", f"LOG.append({t.name} * 1)"]
    for lst in g.env.lists:
        options += [f"{lst}.append({a})", f"{lst}.insert(0, {g.int_expr()})", f"{lst}.extend([{a}, {g.int_expr()}])"]
        if g.chance(0.3):
            options += [f"{lst}.pop()", f"{lst}[0] = {a}", f"{lst}.sort()", f"{lst}.reverse()"]
    for d in g.env.dicts:
        options += [f'{d}["out"] = {a}', f'{d}["calls"] = {d}.get("calls", 0) + 1', f"{d}[{a}] = {g.int_expr()}"]
        if t is not None:
            options.append(f'{d}["t"] = {t.name} + 1' if t.dtype != "b" else f'{d}["t"] = {t.name}')
    return [Stmt(g.pick(options))]


def graph_break(g: Gen) -> list[Stmt] | None:
    a = g.size_expr()[0]
    t = g.tensor()
    shape = f"{t.name}.shape" if t is not None else "None"
    return [Stmt(g.pick([f"print({a}, {shape}, file=SINK)", f'print(f"n={{{a}}}", file=SINK)', "pdyn.graph_break()",
                         f'SINK.write(str({a}) + "\\n")', f'print({a}, sep="", end=";", file=SINK)']))]


def raises(g: Gen) -> list[Stmt] | None:
    """Code that raises for some calls: eager and pdyn must raise the same type."""
    a, b = g.size_expr()[0], g.int_expr()
    options = [lambda: [Stmt(f'assert {a} >= 1, f"empty: {{{a}}}"')],
               lambda: [Stmt(f"if {a} > {g.rng.randint(4, 8)}:", [Stmt(f'raise ValueError(f"{{{a}}} is too big")')])],
               lambda: g.new_var("ints", f"10 // ({a} - {b})"), lambda: g.new_var("floats", f"math.sqrt({b} - 1)"),
               lambda: g.new_var("ints", f"TABLE[{a} + 5]"),
               lambda: g.new_var("ints", f"{{2: 1, 3: 2, 4: 0, 5: 1}}[{a}]"),
               lambda: [Stmt(f"if {g.condition()}:", [Stmt(f"raise KeyError({a})")])]]
    t = g.ranked(1)
    if t is not None:
        options += [lambda: g.new_var("others", f"{t.name}.view({g.small_int()}, -1)"),
                    lambda: g.new_var("others", f"{t.name}[{b}]")]
    return g.pick(options)()


# -- blocks ------------------------------------------------------------------------------------------------


def _body(g: Gen, count: int) -> list[Stmt]:
    """Statements for a block body; the names it defines are forgotten afterwards."""
    saved = g.snapshot()
    g.depth += 1
    out = [s for _ in range(count) for s in choose(g, g.body_table)]
    g.depth -= 1
    g.env = saved
    return out


def update(g: Gen) -> list[Stmt] | None:
    """Rebinds an existing name to a value of the same kind and shape (safe inside any block)."""
    options = []
    if g.env.accumulators:
        acc = g.pick(g.env.accumulators)
        options += [f"{acc} = {acc} + {g.int_expr()}", f"{acc} += {g.small_int()}", f"{acc} = {acc} * 2 - 1"]
    t = g.tensor(lambda t: t.dtype == "f" and not t.param)
    if t is not None:
        options += [f"{t.name} = {t.name} * 0.5 + {g.scalar_expr()}", f"{t.name} = torch.tanh({t.name}) - 1",
                    f"{t.name} = {t.name} + {g.small_int()}"]
    return [Stmt(g.pick(options))] if options else None


def accumulator(g: Gen) -> list[Stmt]:
    value = g.pick(["0", g.small_int(), g.int_expr()])  # before the name exists: it must not read itself
    name = g.fresh("acc")
    g.env.ints.append(name)
    g.env.accumulators.append(name)
    return [Stmt(f"{name} = {value}")]


def if_block(g: Gen) -> list[Stmt] | None:
    if g.depth >= 2:
        return None
    head = Stmt(f"if {g.condition()}:", _body(g, g.rng.randint(1, 3)))
    if g.chance(0.5):
        head.orelse = _body(g, g.rng.randint(1, 2))
    return [head]


def ternary(g: Gen) -> list[Stmt] | None:
    cond = g.condition()
    t = g.tensor(lambda t: t.dtype == "f")
    if t is not None and g.chance(0.5):
        name = g.fresh("t")
        g.add_tensor(name, t.shape)
        return [Stmt(f"{name} = {t.name} * 2 if {cond} else {t.name} - 1")]
    return g.new_var("ints", f"{g.int_expr()} if {cond} else {g.size_expr()[0]}")


def for_block(g: Gen) -> list[Stmt] | None:
    if g.depth >= 2:
        return None
    pre = [] if g.env.accumulators and g.chance(0.6) else accumulator(g)
    acc = g.pick(g.env.accumulators)
    t = g.tensor(lambda t: t.rank >= 1)
    i = g.fresh("i")
    heads = [f"for {i} in range({g.small_int()}):", f"for {i} in range(1, {g.small_int()}):",
             f"for {i} in range({g.small_int()} - 1, -1, -1):"]
    if t is not None:
        heads += [f"for {i} in {t.name}.shape:", f"for _, {i} in enumerate({t.name}.size()):"]
    if g.env.lists:
        heads.append(f"for {i} in {g.pick(g.env.lists)}:")
    head = g.pick(heads)
    saved = g.snapshot()
    if "in range(" in head or ".shape" in head or ".size()" in head:
        g.env.sizes[i] = g.opaque()
    else:
        g.env.ints.append(i)
    body = [Stmt(f"{acc} += {i}")] + _body(g, g.rng.randint(0, 2))
    g.env = saved
    return pre + [Stmt(head, body)]


def while_block(g: Gen) -> list[Stmt] | None:
    if g.depth >= 2:
        return None
    i = g.fresh("i")
    bound = g.small_int()
    saved = g.snapshot()
    g.env.sizes[i] = g.opaque()
    body = _body(g, g.rng.randint(1, 2)) + [Stmt(f"{i} += {g.pick(['1', '1', '2'])}")]
    g.env = saved
    return [Stmt(f"{i} = 0"), Stmt(f"while {i} < {bound}:", body)]


def helper_function(g: Gen) -> list[Stmt] | None:
    """A closure over a size, called on a size: inlined by the tracer."""
    name = g.fresh("h")
    a = g.size_expr()[0]
    body = [Stmt(f"return v * {a} + {g.pick(['1', 'len(LOG)', 'COUNTER'])}")]
    return [Stmt(f"def {name}(v):", body)] + g.new_var("ints", f"{name}({g.small_int()})")


PYTHON_MAKERS = [(8, size_read), (2, shape_use), (6, int_arith), (4, float_arith), (1.5, float_to_int), (4, compare),
                 (3, to_str), (5, containers), (4, side_effect), (2.5, graph_break), (0.8, raises), (4, if_block),
                 (2, ternary), (3, for_block), (1.5, while_block), (1, helper_function)]
BLOCK_EXTRA = [(6, update)]

"""Statement makers for tensor work: pointwise ops, reductions, matmuls, views, cat/stack, indexing,
in-place updates, factories, dtype changes and reads of tensor data into Python.

Each maker returns the statements it made (registering the new variables in `g.env`) or None
when nothing in scope fits. `TENSOR_MAKERS` is the weighted table the generator draws from.
"""

from __future__ import annotations

from tests.fuzz.gen_core import FLOAT_THRESHOLD, Gen, Tensor
from tests.fuzz.program import Stmt

Shape = tuple[str, ...]

# (template, result dtype); "{x}" is the operand
UNARY_F = [("torch.relu({x})", "f"), ("torch.sigmoid({x})", "f"), ("torch.tanh({x})", "f"), ("{x}.abs()", "f"),
           ("-{x}", "f"), ("{x}.sin()", "f"), ("torch.exp({x})", "f"), ("{x}.clamp(min=-0.5, max=0.5)", "f"),
           ("F.gelu({x})", "f"), ("F.silu({x})", "f"), ("{x}.sign()", "f"), ("torch.floor({x})", "f"),
           ("{x}.square()", "f"), ("torch.sqrt({x}.abs())", "f"), ("torch.log1p({x}.abs())", "f"),
           ("torch.rsqrt({x}.abs() + 1)", "f"), ("{x}.reciprocal()", "f"), ("{x}.double()", "f"),
           ("{x}.cos()", "f"), ("{x}.round()", "f"), ("torch.erf({x})", "f"), ("F.leaky_relu({x}, 0.1)", "f"),
           ("{x}.clone()", "f"), ("{x}.contiguous()", "f"), ("{x}.long()", "i"), ("({x} > 0)", "b"),
           ("torch.where({x} > 0, {x}, 0.0)", "f"), ("{x}.masked_fill({x} < 0, 1.0)", "f"), ("{x}.float()", "f")]
UNARY_I = [("{x}.abs()", "i"), ("-{x}", "i"), ("{x} * 2", "i"), ("{x} + 1", "i"), ("{x}.clamp(min=0)", "i"),
           ("{x}.float()", "f"), ("{x} % 3", "i"), ("{x}.sign()", "i"), ("({x} == 1)", "b"), ("{x}.double()", "f")]
UNARY_B = [("{x}.float()", "f"), ("~{x}", "b"), ("{x}.long()", "i"), ("{x} & ({x} == 0)", "b"),
           ("{x}.int()", "i")]
BINARY_F = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / {b}", "torch.maximum({a}, {b})",
            "torch.minimum({a}, {b})", "torch.where({a} > {b}, {a}, {b})", "torch.atan2({a}, {b})",
            "{a} * 0.5 + {b}", "torch.add({a}, {b}, alpha=2)"]
BINARY_I = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "torch.maximum({a}, {b})"]
# (template, keeps the reduced dim as 1, result dtype); "{d}" the dim
REDUCE_F = [("{x}.sum({d})", False, "f"), ("{x}.mean({d})", False, "f"), ("{x}.amax({d})", False, "f"),
            ("{x}.amin(dim={d})", False, "f"), ("{x}.max({d}).values", False, "f"), ("{x}.min(dim={d})[0]", False, "f"),
            ("{x}.prod({d})", False, "f"), ("{x}.logsumexp({d})", False, "f"), ("{x}.norm(dim={d})", False, "f"),
            ("{x}.var({d})", False, "f"), ("torch.sum({x}, dim={d}, keepdim=True)", True, "f"),
            ("{x}.mean({d}, keepdim=True)", True, "f"), ("{x}.argmax({d})", False, "i"),
            ("{x}.std({d}, keepdim=True)", True, "f"), ("({x} > 0).sum({d})", False, "i"),
            ("{x}.any({d})", False, "b")]
KEEP_F = ["{x}.cumsum({d})", "torch.softmax({x}, {d})", "torch.log_softmax({x}, dim={d})",
          "F.normalize({x}, dim={d})", "{x} - {x}.mean({d}, keepdim=True)", "{x}.flip({d})",
          "{x}.roll(1, {d})", "{x} / {x}.sum({d}, keepdim=True)", "F.softmax({x}, dim={d}) * {x}"]
FULL_F = [("{x}.sum()", "f"), ("{x}.mean()", "f"), ("{x}.amax()", "f"), ("{x}.abs().max()", "f"),
          ("{x}.norm()", "f"), ("{x}.all()", "b"), ("{x}.var()", "f"), ("torch.count_nonzero({x})", "i")]


def broadcast(a: Shape, b: Shape) -> Shape | None:
    """The broadcast shape of two symbolic shapes, or None where they may not broadcast."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else "1"
        db = b[-i] if i <= len(b) else "1"
        if da == db or db == "1":
            out.append(da)
        elif da == "1":
            out.append(db)
        else:
            return None
    return tuple(reversed(out))


def product(shape: Shape) -> str:
    return "*".join(shape) if shape else "1"


def _assign(g: Gen, expr: str, shape: Shape | None, dtype: str) -> list[Stmt]:
    name = g.fresh("t")
    g.add_tensor(name, shape, dtype)
    return [Stmt(f"{name} = {expr}")]


def unary(g: Gen) -> list[Stmt] | None:
    x = g.tensor()
    if x is None:
        return None
    table = {"f": UNARY_F, "i": UNARY_I, "b": UNARY_B}[x.dtype]
    template, dtype = g.pick(table)
    return _assign(g, template.format(x=x.name), x.shape, dtype)


def scalar_binary(g: Gen) -> list[Stmt] | None:
    x = g.tensor(lambda t: t.dtype != "b")
    if x is None:
        return None
    if x.dtype == "i":
        s = g.small_int()
        expr = g.pick([f"{x.name} + {s}", f"{x.name} * ({s})", f"({s}) - {x.name}", f"{x.name} * True"])
        return _assign(g, expr, x.shape, "i")
    s = g.scalar_expr()
    expr = g.pick([f"{x.name} + {s}", f"{x.name} * ({s})", f"{x.name} / ({s})", f"({s}) - {x.name}",
                   f"{x.name} ** 2", f"({s}) * {x.name} + 1", f"{x.name}.pow({g.pick(['2', '3', '0.5'])})",
                   f"torch.clamp({x.name}, min=-({s}))"])
    return _assign(g, expr, x.shape, "f")


def tensor_binary(g: Gen) -> list[Stmt] | None:
    a = g.tensor(lambda t: t.dtype in "fi")
    if a is None:
        return None
    partners = [b for b in g.tensors(lambda t: t.dtype == a.dtype) if b is a or (
        a.shape is not None and b.shape is not None and broadcast(a.shape, b.shape) is not None)]
    b = g.pick(partners)
    shape = a.shape if b is a else broadcast(a.shape, b.shape)  # type: ignore[arg-type]
    template = g.pick(BINARY_F if a.dtype == "f" else BINARY_I)
    if g.chance(0.5):
        a, b = b, a
    return _assign(g, template.format(a=a.name, b=b.name), shape, a.dtype)


def mismatched_binary(g: Gen) -> list[Stmt] | None:
    """Two same-rank tensors whose dims differ: a shape error unless the sizes agree (or are 1)."""
    a = g.ranked(1)
    if a is None:
        return None
    others = g.tensors(lambda t: t.dtype == "f" and t.rank == a.rank and t.shape != a.shape and t.shape is not None)
    if not others:
        return None
    b = g.pick(others)
    return _assign(g, f"{a.name} + {b.name}", tuple(g.opaque() for _ in a.shape or ()), "f")


def reduce(g: Gen) -> list[Stmt] | None:
    x = g.tensor(lambda t: t.dtype == "f" and t.rank != 0)
    if x is None:
        return None
    if x.shape is None or g.chance(0.15):
        template, dtype = g.pick(FULL_F)
        return _assign(g, template.format(x=x.name), (), dtype)
    d = g.dim(x)
    roll = g.rng.random()
    if roll < 0.3:
        return _assign(g, g.pick(KEEP_F).format(x=x.name, d=d), x.shape, "f")
    if roll < 0.38:
        norm = g.pick([f"({g.size_read(x, -1)},)", f"{x.name}.shape[-1:]"])
        return _assign(g, f"F.layer_norm({x.name}, {norm})", x.shape, "f")
    template, keep, dtype = g.pick(REDUCE_F)
    shape = list(x.shape)
    if keep:
        shape[d] = "1"
    else:
        del shape[d]
    return _assign(g, template.format(x=x.name, d=d), tuple(shape), dtype)


def int_reduce(g: Gen) -> list[Stmt] | None:
    x = g.ranked(1, "i")
    if x is None:
        return None
    d = g.dim(x)
    shape = x.shape[:d % x.rank] + x.shape[d % x.rank + 1:]  # type: ignore[index]
    template = g.pick(["{x}.sum({d})", "{x}.max({d}).values", "{x}.argmax({d})", "{x}.amin({d})"])
    if g.chance(0.3):
        return _assign(g, f"{x.name}.cumsum({d})", x.shape, "i")
    return _assign(g, template.format(x=x.name, d=d), shape, "i")


def matmul(g: Gen) -> list[Stmt] | None:
    a = g.ranked(1)
    if a is None:
        return None
    s = a.shape
    assert s is not None
    mats = [b for b in g.tensors(lambda t: t.dtype == "f" and t.rank in (1, 2) and t.shape is not None)
            if b.shape[0] == s[-1]]  # type: ignore[index]
    roll = g.rng.random()
    if mats and roll < 0.35:
        b = g.pick(mats)
        shape = s[:-1] + b.shape[1:]  # type: ignore[index, operator]
        ops = ["{a} @ {b}", "torch.matmul({a}, {b})"] + (["torch.mm({a}, {b})"] if a.rank == b.rank == 2 else [])
        op = g.pick(ops)
        return _assign(g, op.format(a=a.name, b=b.name), shape, "f")
    if len(s) >= 2 and roll < 0.65:
        if g.chance(0.5):
            return _assign(g, f"{a.name} @ {a.name}.transpose(-2, -1)", s[:-1] + (s[-2],), "f")
        return _assign(g, f"{a.name}.mT @ {a.name}", s[:-2] + (s[-1], s[-1]), "f")
    k = g.rng.randint(1, 4)
    w = g.fresh("w")
    read = g.size_read(a, -1)
    g.add_tensor(w, (s[-1], str(k)))
    dtype = f", dtype={a.name}.dtype" if g.chance(0.8) else ""  # float64 inputs need a float64 weight
    out = [Stmt(f"{w} = torch.linspace(-1, 1, {read} * {k}{dtype}).reshape({read}, {k})")]
    if g.chance(0.3):
        return out + _assign(g, f"F.linear({a.name}, {w}.t())", s[:-1] + (str(k),), "f")
    return out + _assign(g, f"{a.name} @ {w}", s[:-1] + (str(k),), "f")


def view(g: Gen) -> list[Stmt] | None:
    x = g.tensor(lambda t: t.dtype in "fi")
    if x is None:
        return None
    if x.shape is None:
        expr = g.pick(["{x}.reshape(-1)", "{x}.flatten()", "{x}.unsqueeze(0)", "{x}.squeeze()"])
        shape = (g.opaque(),) if "flat" in expr or "-1" in expr else None
        return _assign(g, expr.format(x=x.name), shape, x.dtype)
    s, n = x.shape, x.name
    options: list[tuple[str, Shape | None]] = [
        (f"{n}.reshape(-1)", (product(s),)), (f"{n}.flatten()", (product(s),)),
        (f"{n}.unsqueeze(0)", ("1",) + s), (f"{n}[None]", ("1",) + s), (f"{n}.squeeze()", None),
        (f"{n}.contiguous().view(-1)", (product(s),))]
    if len(s) >= 1:
        d = g.rng.randrange(len(s) + 1)
        options += [(f"{n}.unsqueeze({d})", s[:d] + ("1",) + s[d:]), (f"{n}[:, None]", s[:1] + ("1",) + s[1:]),
                    (f"{n}.expand(2, *{n}.shape)", ("2",) + s),
                    (f"{n}.unsqueeze(-1).expand(*{n}.shape, 3)", s + ("3",))]
    if len(s) >= 2:
        i, j = g.rng.sample(range(len(s)), 2)
        swapped = list(s)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        perm = list(range(len(s)))
        g.rng.shuffle(perm)
        options += [(f"{n}.transpose({i}, {j})", tuple(swapped)),
                    (f"{n}.permute({', '.join(map(str, perm))})", tuple(s[p] for p in perm)),
                    (f"{n}.reshape({g.size_read(x, 0)}, -1)", (s[0], product(s[1:]))),
                    (f"{n}.{'view' if g.chance(0.3) else 'reshape'}(-1, {g.size_read(x, -1)})",
                     (product(s[:-1]), s[-1])),
                    (f"{n}.movedim(0, -1)", s[1:] + s[:1]), (f"{n}.mT", s[:-2] + (s[-1], s[-2])),
                    (f"{n}.flatten(0, 1)", (product(s[:2]),) + s[2:])]
    if len(s) == 2:
        options += [(f"{n}.t()", (s[1], s[0])),
                    (f"{n}.reshape({g.size_read(x, 1)}, {g.size_read(x, 0)})", (s[1], s[0])),
                    (f"torch.tril({n})", s)]
    for d, dim in enumerate(s):
        if dim == "1":
            options.append((f"{n}.squeeze({d})", s[:d] + s[d + 1:]))
    expr, shape = g.pick(options)
    return _assign(g, expr, shape, x.dtype)


def sized(g: Gen) -> list[Stmt] | None:
    """Ops whose output sizes are Python arithmetic on sizes (symbolic once the dims are dynamic)."""
    x = g.tensor(lambda t: t.dtype == "f" and t.rank >= 1)
    if x is None:
        return None
    s, n = x.shape, x.name
    assert s is not None
    d0 = g.size_read(x, 0)
    m = g.small_int()
    rest = s[1:]
    o = g.opaque
    options: list[tuple[str, Shape]] = [
        (f"{n}[: {d0} // 2]", (o(),) + rest), (f"{n}[{d0} // 3 :]", (o(),) + rest),
        (f"{n}.narrow(0, {d0} // 3, {d0} // 3)", (o(),) + rest), (f"{n}[::({m} % 3) + 1]", (o(),) + rest),
        (f"torch.zeros({d0} * 2 - 1)", (o(),)), (f"{n}.new_zeros({m} % 3 + 1)", (o(),)),
        (f"torch.arange({m}, {d0} + {m})", (s[0],)), (f"{n}.roll({m}, 0)", s),
        (f"F.pad({n}, ({m} % 3, 1))", s[:-1] + (o(),)),
        (f"{n}.repeat({m} % 3 + 1, *([1] * ({n}.dim() - 1)))", (o(),) + rest),
        (f"{n}.split([{d0} // 2, {d0} - {d0} // 2])[1]", (o(),) + rest), (f"{n}.reshape({n}.shape[:-1] + (-1,))", s),
        (f"{n}.view(*{n}.shape[:-1], -1)" if g.chance(0.3) else f"{n}.reshape(*{n}.shape[:-1], -1)", s),
        (f"torch.topk({n}, min({m}, {g.size_read(x, -1)}), dim=-1).values", s[:-1] + (o(),)),
        (f"{n}.expand({m} % 2 + 1, *{n}.shape)", (o(),) + s), (f"{n} * ({d0} / 3)", s),
        (f"{n} + {d0} ** 0.5", s), (f"torch.full({n}.shape, {d0} / 2)", s)]
    if len(s) >= 2:
        d1 = g.size_read(x, 1)
        options += [(f"{n}.reshape({d0} * {d1}, -1)", (o(), o()) if len(s) > 2 else (o(), "1")),
                    (f"{n}[:, : {d1} - 1]", (s[0], o()) + s[2:]),
                    (f"{n}.flatten(0, 1)[: {d0} * {d1} // 2]", (o(),) + s[2:]),
                    (f"{n}.expand({d0}, -1, *{n}.shape[2:])", s)]
    expr, shape = g.pick(options)
    return _assign(g, expr, shape, "f")


def split(g: Gen) -> list[Stmt] | None:
    x = g.tensor(lambda t: t.dtype in "fi" and t.rank >= 1)
    if x is None:
        return None
    assert x.shape is not None
    d = g.dim(x)
    cut = list(x.shape)
    cut[d] = g.opaque()
    options: list[tuple[str, Shape]] = [
        (f"torch.chunk({x.name}, 2, {d})[0]", tuple(cut)), (f"{x.name}.split(2, dim={d})[-1]", tuple(cut)),
        (f"{x.name}.unbind({d})[0]", x.shape[:d % x.rank] + x.shape[d % x.rank + 1:]),
        (f"{x.name}.narrow({d}, 0, 1)", tuple("1" if i == d % x.rank else v for i, v in enumerate(x.shape)))]
    expr, shape = g.pick(options)
    return _assign(g, expr, shape, x.dtype)


def cat(g: Gen) -> list[Stmt] | None:
    x = g.tensor(lambda t: t.dtype in "fi" and t.rank >= 1)
    if x is None:
        return None
    s = x.shape
    assert s is not None
    d = g.rng.randrange(len(s))
    mates = [t for t in g.tensors(lambda t: t.dtype == x.dtype and t.rank == len(s))
             if all(a == b for i, (a, b) in enumerate(zip(t.shape, s)) if i != d)]  # type: ignore[arg-type]
    y = g.pick(mates)
    dd = d - len(s) if g.chance(0.3) else d
    if y.shape == s and g.chance(0.35):
        where = g.rng.randrange(len(s) + 1)
        return _assign(g, f"torch.stack([{x.name}, {y.name}], {where})", s[:where] + ("2",) + s[where:], x.dtype)
    shape = list(s)
    shape[d] = f"({s[d]}+{y.shape[d]})"  # type: ignore[index]
    second = g.pick([y.name, f"{y.name} * 2", f"{y.name}.flip({dd})"]) if x.dtype == "f" else y.name
    return _assign(g, f"torch.cat([{x.name}, {second}], dim={dd})", tuple(shape), x.dtype)


def index(g: Gen) -> list[Stmt] | None:
    x = g.tensor(lambda t: t.rank >= 1)
    if x is None:
        return None
    s, n = x.shape, x.name
    assert s is not None
    rest = s[1:]
    options: list[tuple[str, Shape]] = [
        (f"{n}[0]", rest), (f"{n}[-1]", rest), (f"{n}[1:]", (g.opaque(),) + rest), (f"{n}[::2]", (g.opaque(),) + rest),
        (f"{n}[..., -1]", s[:-1]), (f"{n}[..., :2]", s[:-1] + (g.opaque(),)),
        (f"{n}[:{g.small_int()}]", (g.opaque(),) + rest),
        (f"{n}[{n} > 0]" if x.dtype != "b" else f"{n}[{n}]", (g.opaque(),)), (f"{n}[[0, 0]]", ("2",) + rest),
        (f"{n}.select(0, -1)", rest), (f"{n}[{g.int_expr()}]", rest),
        (f"{n}[{g.small_int()} % {g.size_read(x, 0)}]", rest),
        (f"{n}[torch.arange({g.size_read(x, 0)}) % 2 == 0]", (g.opaque(),) + rest)]
    if len(s) >= 2:
        options += [(f"{n}[:, 0]", s[:1] + s[2:]), (f"{n}[:, 1:]", (s[0], g.opaque()) + s[2:]),
                    (f"{n}[1:, :-1]", (g.opaque(), g.opaque()) + s[2:])]
    expr, shape = g.pick(options)
    return _assign(g, expr, shape, x.dtype)


def inplace(g: Gen) -> list[Stmt] | None:
    """An in-place update of a fresh clone, or of a parameter (a side effect eager makes too)."""
    x = g.tensor(lambda t: t.dtype in "fi")
    if x is None:
        return None
    out: list[Stmt] = []
    target = x.name
    if not (x.param and g.chance(0.4)):
        target = g.fresh("c")
        g.add_tensor(target, x.shape, x.dtype)
        out.append(Stmt(f"{target} = {x.name}.clone()"))
    others = [t for t in g.tensors(lambda t: t.dtype == x.dtype) if x.shape is not None and t.shape is not None
              and broadcast(x.shape, t.shape) == x.shape]
    s = g.small_int() if x.dtype == "i" else g.scalar_expr()
    options = [f"{target}.mul_({s})", f"{target}.add_(1)", f"{target} += {s}", f"{target} *= 2"]
    if x.dtype == "f":
        options += [f"{target}.clamp_(-1, 1)", f"{target}.zero_()", f"{target}.fill_({g.float_expr()})",
                    f"torch.relu_({target})", f"{target}.masked_fill_({target} > 0, 0.0)", f"{target}.sub_(0.5)",
                    f"{target}.div_(2)"]
    if others:
        u = g.pick(others).name
        options += [f"{target}.add_({u})", f"{target} -= {u}", f"{target}.copy_({u})"]
    if x.rank >= 1:
        options += [f"{target}[0] = {s}", f"{target}[..., -1] = 0", f"{target}[{target} > 0] = 1",
                    f"{target}[1:] *= 2", f"{target}[0] += 1"]
    if x.rank >= 2:
        options += [f"{target}[:, 0] = {s}", f"{target}.t().mul_(2)" if x.rank == 2 else f"{target}[0].add_(1)"]
    return out + [Stmt(g.pick(options))]


def create(g: Gen) -> list[Stmt] | None:
    a, da = g.size_expr()
    b, db = g.size_expr()
    x = g.tensor(lambda t: t.dtype == "f")
    options: list[tuple[str, Shape | None, str]] = [
        (f"torch.zeros({a}, {b})", (da, db), "f"), (f"torch.ones({a})", (da,), "f"),
        (f"torch.arange({a})", (da,), "i"), (f"torch.arange({a}, dtype=torch.float32)", (da,), "f"),
        (f"torch.linspace(0, 1, {a})", (da,), "f"), (f"torch.eye({a})", (da, da), "f"),
        (f"torch.full(({a}, {b}), {g.float_expr()})", (da, db), "f"), (f"torch.tensor([{a}, {b}])", ("2",), "i"),
        (f"torch.tensor({g.float_expr()})", (), "f"), (f"torch.arange(0, {a}, 2)", (g.opaque(),), "i"),
        (f"torch.ones({g.small_int()}, {b})", (g.opaque(), db), "f")]
    if g.chance(0.05):
        options.append((f"torch.zeros({g.int_expr()})", (g.opaque(),), "f"))  # a negative size raises
    if x is not None:
        n = x.name
        options += [(f"torch.ones_like({n})", x.shape, "f"), (f"torch.zeros_like({n})", x.shape, "f"),
                    (f"torch.full_like({n}, {g.scalar_expr()})", x.shape, "f"),
                    (f"torch.empty_like({n}).fill_(1.5)", x.shape, "f"), (f"{n}.new_zeros({n}.shape)", x.shape, "f"),
                    (f"torch.zeros({n}.size())", x.shape, "f"),
                    (f"torch.tensor({n}.shape)", (str(max(x.rank, 0)),), "i"),
                    (f"{n}.new_ones({a})", (da,), "f")]
    if g.env.shapes:
        sh = g.pick(list(g.env.shapes))
        options.append((f"torch.zeros({sh})", tuple(g.opaque() for _ in range(g.env.shapes[sh])), "f"))
    expr, shape, dtype = g.pick(options)
    return _assign(g, expr, shape, dtype)


def item(g: Gen) -> list[Stmt] | None:
    """Tensor data read into Python: a graph break or a data dependency."""
    x = g.tensor(lambda t: t.dtype in "fi")
    if x is None:
        return None
    n = x.name
    if x.dtype == "i":
        return g.new_var("ints", g.pick([f"{n}.sum().item()", f"int({n}.sum())",
                                         f"{n}.numel() + int({n}.abs().sum())"]))
    roll = g.rng.random()
    if roll < 0.55:
        return g.new_var("floats", g.pick([f"{n}.sum().item()", f"float({n}.mean())", f"{n}.abs().sum().item() + 1",
                                           f"{n}.norm().item()"]))
    if roll < 0.7:
        return g.new_var("bools", g.pick([f"bool(({n} > 0).any())", f"({n}.sum() > {FLOAT_THRESHOLD}).item()"]))
    if roll < 0.85:
        return g.new_var("ints", g.pick([f"int({n}.argmax())" if x.rank != 0 else f"int({n} > 0)",
                                         f"int(({n} > 0).sum())"]))
    return g.new_var("others", f"{n}.tolist()")


TENSOR_MAKERS = [(8, unary), (7, scalar_binary), (7, tensor_binary), (0.6, mismatched_binary), (8, reduce),
                 (1.5, int_reduce), (5, matmul), (7, view), (5, sized), (2, split), (4, cat), (5, index), (5, inplace),
                 (4, create), (3, item)]

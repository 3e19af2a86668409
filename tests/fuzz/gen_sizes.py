"""Size-arithmetic programs: `generate_sizes(seed)` is a `Program` whose sizes go through padding to
a multiple, windows (`view(-1, k, ...)`), `unfold`, `chunk`/`split`, `reshape(-1)`, floor division,
modulo, min/max of sizes and branches on derived sizes, called 6-8 times with sizes that take every
residue of the moduli used (consecutive sizes in shuffled order, now and then a 1 or a 0).

Each step reads the sizes it needs from `x.shape` at run time, so the generator tracks only the
rank; padding before a view makes the view valid in eager for every size (a 0-size dim may still
make eager raise, which pdyn must then raise too). The runner compares with eager as for the other
programs (`python -m tests.fuzz --kind sizes`).
"""

from __future__ import annotations

import random
from typing import Callable

from tests.fuzz.program import Program, Stmt, T

PAD_FORMS = ["({k} - {n} % {k}) % {k}", "-{n} % {k}", "(-{n}) % {k}", "-(-{n} // {k}) * {k} - {n}",
             "({k} - {n} % {k}) if {n} % {k} else 0"]
MODULI = [2, 3, 4, 5, 6]


class SizeGen:
    """The RNG, the current rank of `x`, and the moduli used (the calls cover their residues)."""

    def __init__(self, rng: random.Random, ndim: int):
        self.rng, self.ndim, self.moduli, self.count = rng, ndim, set(), 0

    def k(self) -> int:
        k = self.rng.choice(MODULI)
        self.moduli.add(k)
        return k

    def dim(self) -> int:
        return self.rng.randrange(self.ndim)

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def pad_amount(self, n: str, k: int) -> str:
        return self.rng.choice(PAD_FORMS).format(n=n if n.isidentifier() or n.endswith(']') or n.endswith(')') else f'({n})', k=k)


def _pad_list(ndim: int, d: int, amount: str) -> str:
    """F.pad's list (last dim first) that pads dim `d` at the end by `amount`."""
    pairs = ["0, 0"] * (ndim - 1 - d) + [f"0, {amount}"]
    return "(" + ", ".join(pairs) + ")"


def pad_window(g: SizeGen) -> list[Stmt]:
    """Pad dim d to a multiple of k, then split it into (-1, k) windows."""
    d, k, p = g.dim(), g.k(), g.fresh("p")
    out = [Stmt(f"{p} = {g.pad_amount(f'x.shape[{d}]', k)}"), Stmt(f"x = F.pad(x, {_pad_list(g.ndim, d, p)})")]
    form = g.rng.random()
    if form < 0.4 or g.ndim == 1:
        out.append(Stmt(f"x = x.view(*x.shape[:{d}], -1, {k}, *x.shape[{d + 1}:])"))
    elif d == g.ndim - 1 and form < 0.7:
        out.append(Stmt(f"x = x.view(-1, {k})"))   # swin-style: the leading dims fold into the count
        g.ndim = 1
    else:
        out.append(Stmt(f"x = x.reshape(*x.shape[:{d}], x.shape[{d}] // {k}, {k}, *x.shape[{d + 1}:])"))
    g.ndim += 1
    return out


def flat_window(g: SizeGen) -> list[Stmt]:
    """reshape(-1), pad the element count to a multiple, view(-1, k) (or cat zeros instead of pad)."""
    k = g.k()
    g.ndim = 2
    if g.rng.random() < 0.3:
        return [Stmt("x = x.reshape(-1)"),
                Stmt(f"x = torch.cat([x, x.new_zeros({g.pad_amount('x.shape[0]', k)})]).view(-1, {k})")]
    return [Stmt(f"x = F.pad(x.reshape(-1), (0, {g.pad_amount('x.numel()', k)})).view(-1, {k})")]


def unfold(g: SizeGen) -> list[Stmt]:
    d, k = g.dim(), g.k()
    step = g.rng.choice([1, k, k, max(1, k - 1)])
    out = [] if g.rng.random() < 0.3 else [Stmt(f"x = F.pad(x, {_pad_list(g.ndim, d, g.pad_amount(f'x.shape[{d}] + {k}', k))})")]
    g.ndim += 1
    return out + [Stmt(f"x = x.unfold({d}, {k}, {step})")]


def chunk(g: SizeGen) -> list[Stmt]:
    d, k = g.dim(), g.k()
    pick = g.rng.choice(["0", "-1", "len({0}) // 2"])
    parts = g.fresh("parts")
    # at most k + 1 parts: a tuple of hundreds of tensors across a break costs seconds, not sizes
    how = f"x.chunk({k}, dim={d})" if g.rng.random() < 0.6 else f"torch.split(x, x.shape[{d}] // {k} + 1, dim={d})"
    return [Stmt(f"{parts} = {how}"), Stmt(f"acc = acc + len({parts})"), Stmt(f"x = {parts}[{pick.format(parts)}]")]


def derived(g: SizeGen) -> list[Stmt]:
    """An int from sizes by // % min max, added to acc, sometimes used to slice."""
    d, k, n = g.dim(), g.k(), g.fresh("n")
    forms = [f"x.shape[{d}] // {k}", f"x.shape[{d}] % {k}", f"x.numel() % {k}", f"-(-x.shape[{d}] // {k})",
             f"min(x.shape[{d}], {k})", f"max(x.shape[{d}] - {k}, 1)", f"x.shape[{d}] * {k} // {g.k()}",
             f"(x.shape[{d}] + {k} - 1) // {k} * {k}", f"x.shape[{g.dim()}] % {k} + x.shape[{d}] // {k}"]
    out = [Stmt(f"{n} = {g.rng.choice(forms)}"), Stmt(f"acc = acc + {n} * {g.rng.choice([1, 10, 100])}")]
    if g.rng.random() < 0.4:
        out.append(Stmt(f"x = x.narrow({d}, 0, min({n}, x.shape[{d}]))"))
    elif g.rng.random() < 0.3:
        out.append(Stmt("x = x[" + ":, " * d + f"{n} % (x.shape[{d}] + 1):]"))
    return out


def branch(g: SizeGen) -> list[Stmt]:
    d, k = g.dim(), g.k()
    conds = [f"x.shape[{d}] % {k} == {g.rng.randrange(k)}", f"x.shape[{d}] // {k} > {g.rng.randrange(4)}",
             f"x.numel() % {k} == 0", f"x.shape[0] > {g.rng.randrange(2, 9)}",
             f"(x.shape[{d}] + {g.rng.randrange(k)}) // {k} % 2 == 1"]
    then = [Stmt(f"acc = acc + {g.rng.choice([1000, 100])}"), Stmt(f"x = x * {g.rng.choice([2, -1])}")]
    orelse = [Stmt(f"acc = acc - {g.rng.choice([7, 1])}")] if g.rng.random() < 0.6 else []
    return [Stmt(f"if {g.rng.choice(conds)}:", then, orelse)]


def merge(g: SizeGen) -> list[Stmt]:
    """Keep the rank small: fold the first two dims (or flatten everything)."""
    if g.rng.random() < 0.5:
        g.ndim -= 1
        return [Stmt("x = x.flatten(0, 1)")]
    g.ndim = 1
    return [Stmt("x = x.reshape(-1)")]


MAKERS: list[tuple[float, Callable[[SizeGen], list[Stmt]]]] = [
    (5, pad_window), (3, flat_window), (2, unfold), (2, chunk), (4, derived), (4, branch)]


def generate_sizes(seed: int) -> Program:
    rng = random.Random(seed)
    rank = rng.choice([1, 2, 2, 3])
    g = SizeGen(rng, rank)
    body = [Stmt("acc = 0")]
    for _ in range(rng.randint(2, 5)):
        if g.ndim >= 4:
            body += merge(g)
        maker = rng.choices([m for _, m in MAKERS], weights=[w for w, _ in MAKERS])[0]
        body += maker(g)
    returns = rng.choice([["x", "acc", "tuple(x.shape)"], ["x.sum()", "acc"], ["x", "x.shape"], ["acc", "x.numel()"]])
    return Program(["x"], body, returns, make_calls(rng, rank), seed, "tuple")


def make_calls(rng: random.Random, rank: int) -> list[tuple[T, ...]]:
    """6-8 calls; each symbolic dim runs over consecutive sizes (every residue of each modulus, all
    at most 6), shuffled; now and then a 1 or a 0."""
    count = rng.randint(6, 8)
    dims = []
    for _ in range(rank):
        if rng.random() < 0.2:
            dims.append([rng.choice([1, 3, 4])] * count)   # a dim that stays put
            continue
        start = rng.randint(2, 9)
        sizes = list(range(start, start + count))
        rng.shuffle(sizes)
        if rng.random() < 0.15:
            sizes[rng.randrange(1, count)] = rng.choice([0, 1])
        dims.append(sizes)
    return [(T(tuple(d[i] for d in dims), seed=rng.randrange(10**6)),) for i in range(count)]

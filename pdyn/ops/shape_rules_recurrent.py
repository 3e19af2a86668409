"""Shape rules for recurrent layers and padding of sequences: `lstm`, `gru`, `rnn_tanh`,
`rnn_relu` (torch._VF, as nn.LSTM/GRU/RNN call them) and `pad_sequence`.

Registered into `pdyn.ops.shape_rules.RULES` on import. A recurrent op's output has the input's
batch and time dims and `D * H_out` features (D = 2 when bidirectional); its final states have the
sizes of the states passed in. The packed-sequence form (with `batch_sizes`) has data-dependent
sizes and is left to the fake run.
"""

from __future__ import annotations

import sympy

from pdyn.ops.shape_rules import OpCall, Sizes, SymTensor, as_tensor, register


def _recurrent(c: OpCall, states: int) -> list[Sizes] | None:
    args = list(c.args)
    # the packed form, (data, batch_sizes, hx, params, ...), has the batch sizes where the states
    # (lstm: a list) or the params (gru: a list) would be
    if len(args) != 9 or c.kwargs or isinstance(args[1 if states == 2 else 2], SymTensor):
        return None
    x = as_tensor(args[0], "input")
    hx = args[1]
    hs = list(hx) if isinstance(hx, (list, tuple)) else [hx]
    if len(hs) != states or not all(isinstance(h, SymTensor) and h.ndim == 3 for h in hs):
        return None
    bidirectional, batch_first = args[7], args[8]
    if x.ndim != 3 or not isinstance(bidirectional, bool) or not isinstance(batch_first, bool):
        return None  # nn's modules batch an unbatched input before the op
    features = (2 if bidirectional else 1) * sympy.sympify(hs[0].sizes[2])
    out = (x.sizes[0], x.sizes[1], features)
    return [out, *(h.sizes for h in hs)]


@register("lstm")
def lstm(c: OpCall) -> list[Sizes] | None:
    """(output, h_n, c_n) for `_VF.lstm(input, (h0, c0), weights, bias, layers, dropout, train,
    bidirectional, batch_first)`."""
    return _recurrent(c, 2)


@register("gru", "rnn_tanh", "rnn_relu")
def gru(c: OpCall) -> list[Sizes] | None:
    """(output, h_n) for `_VF.gru(input, h0, weights, ...)` and the plain RNNs."""
    return _recurrent(c, 1)


@register("pad_sequence")
def pad_sequence(c: OpCall) -> list[Sizes] | None:
    """`pad_sequence(seqs, batch_first, padding_value, padding_side)`: the longest length, the
    number of sequences, and the trailing dims they share."""
    a = c.bind("sequences", "batch_first", "padding_value", "padding_side", batch_first=False, padding_value=0.0,
               padding_side="right")
    seqs = a["sequences"]
    if not isinstance(seqs, (list, tuple)) or not seqs or not all(isinstance(s, SymTensor) for s in seqs):
        return None
    first = seqs[0]
    if first.ndim == 0 or any(s.ndim != first.ndim for s in seqs):
        return None
    trailing = first.sizes[1:]
    for s in seqs[1:]:
        for mine, theirs in zip(s.sizes[1:], trailing):
            c.require(sympy.Eq(sympy.sympify(mine), sympy.sympify(theirs), evaluate=False),
                      "sequences share their trailing dims")
    longest = sympy.Max(*(sympy.sympify(s.sizes[0]) for s in seqs))
    batch = sympy.Integer(len(seqs))
    lead = (batch, longest) if a["batch_first"] else (longest, batch)
    return [(*lead, *trailing)]

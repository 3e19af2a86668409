"""nn.LSTM / GRU / RNN and pad_sequence over changing batch and time: traced with shape rules (one
compile), RNNBase's weak references to its weights followed with guards."""

import weakref

import pytest
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence

import pdyn
from tests.helpers import check_calls

SHAPES = [(2, 3), (3, 5), (4, 7), (2, 9)]


@pytest.mark.parametrize("make", [
    lambda: nn.LSTM(4, 8, batch_first=True),
    lambda: nn.LSTM(4, 8, num_layers=2, bidirectional=True),
    lambda: nn.LSTM(4, 8, proj_size=3, batch_first=True),
    lambda: nn.GRU(4, 6, batch_first=True, bidirectional=True),
    lambda: nn.RNN(4, 5, nonlinearity="relu"),
], ids=["lstm", "lstm-2layer-bidir", "lstm-proj", "gru-bidir", "rnn-relu"])
def test_a_recurrent_layer_compiles_once_over_batch_and_time(make):
    torch.manual_seed(0)
    layer = make().eval()

    def f(x):
        out, state = layer(x)
        states = state if isinstance(state, tuple) else (state,)
        return out.relu().sum(-1), [s.shape for s in states]

    batch_first = layer.batch_first
    calls = [(torch.randn(b, t, 4) if batch_first else torch.randn(t, b, 4),) for b, t in SHAPES]
    opt = check_calls(f, *calls, compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_replacing_a_recurrent_weight_after_compiling_is_seen():
    torch.manual_seed(0)
    layer = nn.GRU(4, 6, batch_first=True).eval()
    opt = pdyn.optimize(lambda x: layer(x)[0])
    x = torch.randn(2, 3, 4)
    torch.testing.assert_close(opt(x), layer(x)[0])
    with torch.no_grad():
        layer.weight_hh_l0 = nn.Parameter(torch.randn_like(layer.weight_hh_l0))
    torch.testing.assert_close(opt(x), layer(x)[0])


def test_pad_sequence_keeps_the_longest_length_symbolic():
    def f(a, b, c):
        return pad_sequence([a, b, c], batch_first=True, padding_value=-1.0).sum(-1), pad_sequence([a, c]).shape

    calls = [(torch.randn(n, 3), torch.randn(n + 1, 3), torch.randn(2, 3)) for n in (3, 4, 6)]
    opt = check_calls(f, *calls, compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


class Holder:
    def __init__(self, target):
        self.ref = weakref.ref(target)


def test_a_weak_reference_read_from_the_frame_is_followed_and_guarded():
    class Box:
        def __init__(self, scale):
            self.scale = scale

    box, other = Box(2.0), Box(3.0)
    holder = Holder(box)

    def f(x):
        target = holder.ref()
        return x * target.scale if target is not None else x

    opt = check_calls(f, (torch.ones(2),), (torch.ones(3),))
    assert pdyn.stats(opt)["graph_breaks"] == 0
    holder.ref = weakref.ref(other)   # a different referent: the guard on it recompiles
    torch.testing.assert_close(opt(torch.ones(2)), torch.ones(2) * 3.0)

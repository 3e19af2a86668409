"""End-to-end: nn.Module programs under pdyn (attributes, submodules, containers, training mode)."""

from __future__ import annotations

import copy

import torch
from torch import nn

import pdyn
from tests.helpers import check, check_calls


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.n = 3
        self.scale = 0.5
        self.mode = "sum"
        self.use_bias = True
        self.dims = (1, -1)

    def forward(self, x):
        y = x * self.scale + self.n
        if self.use_bias and self.mode == "sum":
            y = y.sum(self.dims[0])
        return y


def test_module_plain_attributes():
    check(Scaled(), torch.randn(2, 3))


class WithParams(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 3))
        self.register_buffer("offset", torch.arange(3.0))

    def forward(self, x):
        return x @ self.weight + self.offset


def test_module_parameters_and_buffers():
    check(WithParams(), torch.randn(2, 4))


def test_linear_layernorm_embedding_dropout():
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(10, 8)
            self.norm = nn.LayerNorm(8)
            self.proj = nn.Linear(8, 4)
            self.drop = nn.Dropout(0.1)

        def forward(self, tokens):
            return self.drop(self.proj(self.norm(self.emb(tokens))))

    check(Net().eval(), torch.tensor([[1, 2, 3], [4, 5, 9]]))


def test_conv_block():
    block = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2))
    check(block.eval(), torch.randn(1, 2, 4, 4))


def test_sequential_called_directly():
    check(nn.Sequential(nn.Linear(3, 5), nn.GELU(), nn.Linear(5, 2), nn.Softmax(-1)), torch.randn(4, 3))


def test_module_list_iteration_and_indexing():
    class Stack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

        def forward(self, x):
            for i, layer in enumerate(self.layers):
                x = layer(x) + i
            return self.layers[-1](x) + self.layers[0].bias, len(self.layers)

    check(Stack(), torch.randn(2, 4))


def test_module_dict_iteration_and_indexing():
    class Heads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.heads = nn.ModuleDict({"a": nn.Linear(3, 2), "b": nn.Linear(3, 1)})

        def forward(self, x):
            out = {k: self.heads[k](x) for k in self.heads}
            for name, head in self.heads.items():
                out[name + "_relu"] = head(x).relu()
            return out, "a" in self.heads

    check(Heads(), torch.randn(2, 3))


def test_sequential_slice_and_len():
    class Body(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.seq = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3))

        def forward(self, x):
            for m in self.seq[:2]:
                x = m(x)
            return x * len(self.seq)

    check(Body(), torch.randn(2, 3))


class Block(nn.Module):
    """A small pre-norm transformer block."""

    def __init__(self, dim: int = 8, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = [z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.out((att @ v).transpose(1, 2).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def test_transformer_block():
    check(Block().eval(), torch.randn(2, 5, 8))


def test_transformer_block_backward_matches_eager():
    model = Block()
    ref = Block()
    ref.load_state_dict(model.state_dict())
    x = torch.randn(2, 3, 8)
    pdyn.optimize(model)(x).pow(2).mean().backward()
    ref(x).pow(2).mean().backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)


def test_training_and_eval_compile_different_graphs():
    class Drop(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(x) + (1.0 if self.training else 0.0)

    m = Drop()
    opt = check(m, torch.randn(4, 4))
    m.eval()
    torch.testing.assert_close(opt(torch.ones(2)), torch.ones(2))
    assert pdyn.stats(opt)["compiles"] == 2


class Helper(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    @property
    def doubled_bias(self):
        return self.lin.bias * 2

    def act(self, x, slope=0.1):
        return torch.where(x > 0, x, x * slope)

    @staticmethod
    def center(x):
        return x - x.mean(-1, keepdim=True)

    def forward(self, x):
        return self.center(self.act(self.lin(x)) + self.doubled_bias)


def test_helper_method_property_staticmethod():
    check(Helper(), torch.randn(2, 3))


def test_optimize_bound_method():
    m = Helper()
    ref = Helper.act(m, torch.linspace(-1, 1, 5), 0.5)
    opt = pdyn.optimize(m.act)
    torch.testing.assert_close(opt(torch.linspace(-1, 1, 5), 0.5), ref)
    check(m.act, torch.randn(4))


def test_optimized_module_keeps_parameters_and_state_dict():
    m = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    params = list(m.parameters())
    state = m.state_dict()
    opt = pdyn.optimize(m)
    x = torch.randn(4, 3)
    torch.testing.assert_close(opt(x), torch.relu(x @ m[0].weight.T + m[0].bias))
    assert opt is m
    assert all(a is b for a, b in zip(opt.parameters(), params))
    assert list(opt.state_dict()) == list(state)
    assert all(opt.state_dict()[k].data_ptr() == v.data_ptr() for k, v in state.items())


def test_parameter_update_is_seen_without_recompile():
    m = nn.Linear(2, 2)
    opt = pdyn.optimize(m)
    x = torch.randn(3, 2)
    opt(x)
    with torch.no_grad():
        m.weight.mul_(2)
    torch.testing.assert_close(opt(x), x @ m.weight.T + m.bias)
    assert pdyn.stats(opt)["compiles"] == 1


def test_module_attribute_change_recompiles():
    m = Scaled()
    opt = pdyn.optimize(m)
    x = torch.randn(2, 3)
    torch.testing.assert_close(opt(x), (x * 0.5 + 3).sum(1))
    m.scale = 2.0
    torch.testing.assert_close(opt(x), (x * 2.0 + 3).sum(1))
    assert pdyn.stats(opt)["compiles"] == 2


def test_replaced_submodule_recompiles():
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    opt = pdyn.optimize(m)
    x = torch.randn(3, 2)
    opt(x)
    m[1] = nn.Tanh()
    torch.testing.assert_close(opt(x), torch.tanh(m[0](x)))
    assert pdyn.stats(opt)["compiles"] == 2


def test_forward_hook_falls_back():
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    m[0].register_forward_hook(lambda mod, inp, out: out * 10)
    check(m, torch.randn(2, 3), graphs=1)


def test_module_attribute_mutation_in_forward():
    class Counter(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0
            self.last = None

        def forward(self, x):
            self.calls = self.calls + 1
            self.last = x * 2
            return x + self.calls

    m = Counter()
    opt = pdyn.optimize(m, backend="eager")
    x = torch.zeros(2)
    assert opt(x).tolist() == [1.0, 1.0]
    assert opt(x).tolist() == [2.0, 2.0]
    assert m.calls == 2
    torch.testing.assert_close(m.last, x * 2)


def test_missing_module_attribute_raises_like_eager():
    class Broken(nn.Module):
        def forward(self, x):
            return x * self.missing

    check(Broken(), torch.randn(2), graphs=0)


def test_buffer_updated_in_forward():
    class Running(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("total", torch.zeros(3))

        def forward(self, x):
            self.total.add_(x.sum(0))
            return x - self.total

    check(Running(), torch.randn(2, 3))


def test_batchnorm_train_updates_running_stats():
    m = nn.BatchNorm1d(3)
    ref = nn.BatchNorm1d(3)
    x = torch.randn(4, 3)
    torch.testing.assert_close(pdyn.optimize(m)(x), ref(x))
    torch.testing.assert_close(m.running_mean, ref.running_mean)
    torch.testing.assert_close(m.running_var, ref.running_var)
    assert m.num_batches_tracked == ref.num_batches_tracked


def test_a_module_list_sliced_by_an_int_read_from_an_object():
    """`self.layers[: self.config.n]` (Llama's decoder loop): the bound is a guarded value read."""
    class Config:
        n = 2

    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(3)])
            self.config = Config()

        def forward(self, x):
            for layer in self.layers[: self.config.n]:
                x = layer(x)
            return x

    m = Stack()
    eager = copy.deepcopy(m)  # optimize() compiles a module in place
    opt = pdyn.optimize(m)
    for n in (2, 3, 5):
        x = torch.randn(n, 4)
        torch.testing.assert_close(opt(x), eager(x))
    m.config.n = eager.config.n = 3
    torch.testing.assert_close(opt(x), eager(x))
    assert pdyn.stats(opt)["graph_breaks"] == 0


# -- modules constructed inside the compiled function -----------------------------------------------

def _made_in_forward(x, labels):
    h = nn.GELU()(nn.Flatten(0, 1)(x))
    h = nn.Dropout(0.25)(nn.Identity()(h))
    probs = nn.Softmax(dim=-1)(h)
    loss = nn.CrossEntropyLoss(ignore_index=-100)(h.view(-1, h.shape[-1]), labels.view(-1))
    return probs, loss + nn.MSELoss(reduction="sum")(probs, torch.zeros_like(probs))


def test_losses_activations_and_dropout_made_in_forward_are_traced():
    labels = [torch.tensor([[1, -100, 2]]), torch.tensor([[0, 1, 2], [3, -100, 4]]),
              torch.tensor([[4, 3, 2, 1], [0, 1, -100, 3], [2, 2, 2, 2]])]
    calls = [(torch.randn(*lab.shape, 5), lab) for lab in labels]
    torch.manual_seed(0)
    opt = pdyn.optimize(_made_in_forward, backend="eager")
    for x, lab in calls:  # dropout is on (a fresh module trains): the same seed draws the same mask
        torch.manual_seed(7)
        expected = _made_in_forward(x, lab)
        torch.manual_seed(7)
        actual = opt(x, lab)
        for a, e in zip(actual, expected):
            torch.testing.assert_close(a, e)
    stats = pdyn.stats(opt)   # batch 1 first: one entry serves batches 1, 2 and 3
    assert (stats["compiles"], stats["graph_breaks"], stats["eager_fallbacks"]) == (1, 0, 0), stats


def test_module_made_in_forward_over_shapes_compares_with_eager():
    def f(x):
        return nn.LeakyReLU(0.2)(x) + nn.LogSoftmax(dim=1)(x) + nn.Hardtanh(-0.5, 0.5)(x)

    opt = check_calls(f, (torch.randn(2, 3),), (torch.randn(4, 3),), (torch.randn(5, 7),), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_module_argument_read_from_an_input_is_guarded():
    def f(x, dim):
        return nn.Softmax(dim=dim)(x)

    x = torch.randn(3, 4)
    opt = check_calls(f, (x, 0), (x, 0), (x, 1), (x, -1), compiles=3)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_bad_module_arguments_raise_like_eager():
    def f(x):
        return nn.Dropout(p=2.0)(x)

    check(f, torch.randn(3), graphs=0)


def test_linear_made_in_forward_is_a_break_with_eager_weights():
    """Eager draws new random weights on every call: the trace cannot hold them as a constant."""
    def f(x):
        return nn.Linear(3, 2)(x * 2) + 1

    check(f, torch.randn(4, 3), graphs=1)  # check seeds both runs alike: the weights must match
    explained = pdyn.explain(f)(torch.randn(4, 3))
    assert [b.key for b in explained.break_reasons] == ["module_construction"]
    assert "creates parameters (weight, bias)" in explained.break_reasons[0].reason


def test_loss_with_a_tensor_weight_made_in_forward_reads_the_argument():
    """The weight becomes the module's buffer: its reads are the argument, and an escaping module
    is built again from it after the graph."""
    def f(x, labels, w):
        loss = nn.CrossEntropyLoss(weight=w * 2, reduction="none")
        return loss(x, labels), loss.weight

    opt = check(f, torch.randn(4, 3), torch.tensor([0, 2, 1, 1]), torch.rand(3), graphs=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_module_with_a_tensor_argument_escapes_rebuilt_from_it():
    def f(w):
        return nn.NLLLoss(weight=w + 1)

    opt = pdyn.optimize(f, backend="eager")
    w = torch.rand(3)
    made = opt(w)
    assert type(made) is nn.NLLLoss and torch.equal(made.weight, w + 1) and made is not opt(w)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_module_made_with_buffers_or_from_modules_is_a_break():
    """BatchNorm's running stats are new tensors per call; a Sequential of modules has no constant
    arguments: both run eagerly (a module made eagerly is a new object per call, of one class: its
    resume function's entry serves them all)."""
    def f(x):
        return nn.BatchNorm1d(3, affine=False)(x) * 2

    check(f, torch.randn(4, 3), graphs=1)
    assert [b.key for b in pdyn.explain(f)(torch.randn(4, 3)).break_reasons] == ["module_construction"]

    def g(x):
        return nn.Sequential(nn.ReLU())(x) + 1

    check(g, torch.randn(4, 3), graphs=1)


def test_module_made_in_forward_escapes_rebuilt_with_its_state():
    def f(x):
        act = nn.ELU(alpha=0.5).eval()
        return act(x), act

    opt = pdyn.optimize(f, backend="eager")
    x = torch.randn(3)
    out, act = opt(x)
    out2, act2 = opt(x)
    assert type(act) is nn.ELU and act.alpha == 0.5 and act.training is False and act is not act2
    torch.testing.assert_close(out, f(x)[0])
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_module_made_in_forward_stored_on_self():
    class Holder(nn.Module):
        def forward(self, x):
            self.act = nn.Tanh()
            return self.act(x)

    m, ref = Holder(), Holder()
    x = torch.randn(2, 3)
    torch.testing.assert_close(pdyn.optimize(m, backend="eager")(x), ref(x))
    assert isinstance(m.act, nn.Tanh) and "act" in m._modules


def test_a_module_overriding_call_in_python_is_inlined_and_reaches_forward():
    """transformers 4.x's GradientCheckpointingLayer overrides `__call__` and calls
    `super().__call__(...)`: the override is inlined, nn.Module's own call runs forward (hooks
    guarded: one registered later recompiles and runs)."""
    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def __call__(self, *args, **kwargs):
            if self.training and kwargs.get("checkpoint"):
                return None
            return super().__call__(*args, **kwargs)

        def forward(self, x):
            return self.lin(x).relu()

    layers = torch.nn.Sequential(Layer(), Layer()).eval()
    eager = copy.deepcopy(layers)  # optimize() compiles a module in place
    opt = pdyn.optimize(layers)
    for n in (2, 3, 5):
        x = torch.randn(n, 4)
        torch.testing.assert_close(opt(x), eager(x))
    assert pdyn.stats(opt)["graph_breaks"] == 0 and pdyn.stats(opt)["compiles"] == 1
    layers[0].register_forward_hook(lambda module, inputs, out: out * 2)
    eager[0].register_forward_hook(lambda module, inputs, out: out * 2)
    torch.testing.assert_close(opt(x), eager(x))
    assert pdyn.stats(opt)["compiles"] == 2


def test_forward_hooks_and_pre_hooks_are_traced_and_guarded():
    """`_call_impl`'s forward pre-hooks and hooks run around the inlined forward; removing a hook
    after compiling recompiles (the hook tables are guarded by their keys)."""
    seen = []

    def build():
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        m[0].register_forward_pre_hook(lambda module, inputs: (inputs[0] * 2,))
        added = m[2].register_forward_hook(lambda module, inputs, out: out + inputs[0].sum())
        m[1].register_forward_hook(lambda module, inputs, out: seen.append(out.shape[0]))
        return m, added

    (eager, eager_hook), (m, hook) = build(), build()
    opt = pdyn.optimize(m)
    for n in (2, 3, 5):
        x = torch.randn(n, 4)
        seen.clear()
        expected, eager_seen = eager(x), list(seen)
        seen.clear()
        torch.testing.assert_close(opt(x), expected)
        assert seen == eager_seen
    assert pdyn.stats(opt)["compiles"] == 1 and pdyn.stats(opt)["graph_breaks"] == 0
    eager_hook.remove()
    hook.remove()
    seen.clear()  # (the appended list is guarded by its length, as any list a trace appends to)
    torch.testing.assert_close(opt(x), eager(x))
    assert pdyn.stats(opt)["compiles"] == 2

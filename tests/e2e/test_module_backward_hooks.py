"""Modules with backward hooks or global module hooks (pdyn/trace/variables/objects/nn_module.py,
pdyn/trace/breaks/callees.py `call_with_hooks`): the caller's graph breaks at the module's call, the
module runs through nn.Module's own hook machinery with its forward optimized on its own, and the
hooks see what eager's see; gradients equal eager's."""

from __future__ import annotations

import torch

import pdyn
from tests.helpers import CountingBackend


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x))).tanh().sum()


def record(log):
    def hook(module, grad_in, grad_out):
        log.append((type(module).__name__, [None if g is None else g.clone() for g in grad_in],
                    [g.clone() for g in grad_out]))
    return hook


def record_pre(log):
    def hook(module, grad_out):
        log.append(("pre", type(module).__name__, [g.clone() for g in grad_out]))
    return hook


def run(register, sizes=(3, 5, 2)):
    """Eager and optimized copies of Net with hooks `register(net, log)` added, over calls of
    several batch sizes: the loss, every gradient and the hooks' log equal eager's."""
    pdyn.reset()
    torch.manual_seed(0)
    eager, opt_net = Net(), Net()
    opt_net.load_state_dict(eager.state_dict())
    log_e, log_a = [], []
    handles = register(eager, log_e)
    backend = CountingBackend()
    opt = pdyn.optimize(opt_net, backend=backend)
    for n in sizes:
        x = torch.randn(n, 4)
        xe, xa = x.clone().requires_grad_(), x.clone().requires_grad_()
        loss_e = eager(xe)
        loss_e.backward()
        for h in handles:
            h.remove()
        handles = register(opt_net, log_a)
        loss_a = opt(xa)
        loss_a.backward()
        for h in handles:
            h.remove()
        handles = register(eager, log_e)
        torch.testing.assert_close(loss_a, loss_e)
        torch.testing.assert_close(xa.grad, xe.grad)
        for (name, p_e), p_a in zip(eager.named_parameters(), opt_net.parameters()):
            torch.testing.assert_close(p_a.grad, p_e.grad, msg=name)
    for h in handles:
        h.remove()
    assert len(log_a) == len(log_e) > 0
    for entry_a, entry_e in zip(log_a, log_e):
        assert repr(entry_a) == repr(entry_e)
    return backend


def ops(backend):
    return [[n.name.rstrip("_0123456789") for n in g.graph.nodes if n.op not in ("placeholder", "output")]
            for g in backend.graphs]


def test_full_backward_hook_on_a_submodule():
    backend = run(lambda net, log: [net.b.register_full_backward_hook(record(log))])
    stats = pdyn.stats()
    assert ops(backend)[:3] == [["linear", "relu"], ["linear"], ["tanh", "sum"]]  # b's forward compiled on its own
    assert stats["graph_breaks"] == 1 and stats["eager_fallbacks"] == 0, stats


def test_backward_pre_hook_and_full_hook_on_two_submodules():
    def register(net, log):
        return [net.a.register_full_backward_hook(record(log)), net.b.register_full_backward_pre_hook(record_pre(log))]

    run(register)
    assert pdyn.stats()["eager_fallbacks"] == 0


def test_a_global_full_backward_hook():
    def register(net, log):
        return [torch.nn.modules.module.register_module_full_backward_hook(record(log))]

    run(register)
    assert pdyn.stats()["eager_fallbacks"] == 0


def test_the_module_is_left_as_it_was():
    net = Net()
    net.b.register_full_backward_hook(lambda *a: None)
    opt = pdyn.optimize(net, backend="eager")
    opt(torch.randn(2, 4, requires_grad=True)).backward()
    assert "forward" not in net.b.__dict__ and "forward" not in net.a.__dict__

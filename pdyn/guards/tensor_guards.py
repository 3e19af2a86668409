"""The guards of a tensor input: its type, dtype, device, grad and sizes (TensorGuard), whether it
is an inference tensor, and the strides a backend or a Python layout read relied on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from pdyn.guards.guards import Guard, Hoist, type_name


@dataclass(frozen=True, eq=False)
class TensorGuard(Guard):
    """A tensor's type, dtype, device, requires_grad and rank, and its static sizes and strides.

    `sizes[i]`/`strides[i]` is None for a dim left dynamic (TENSOR_MATCH_DYNAMIC); with all present
    this is TENSOR_MATCH_STATIC.
    """

    type: type
    dtype: torch.dtype
    device: torch.device
    requires_grad: bool
    sizes: tuple[int | None, ...]
    strides: tuple[int | None, ...] | None
    contiguous: bool | None = None   # with dynamic dims, strides are checked as far as this
    # the lazy conjugate and negative bits (`x.conj()` of a complex tensor, its `.imag`): ops and
    # `is_conj()`/`is_neg()` read them, and a kernel reading the storage would miss them
    conj: bool = False
    neg: bool = False

    def checks(self, v: str, hoist: Hoist) -> list[tuple[str, str]]:
        return [self.type_check(v, hoist)] + self.value_checks(v, hoist) + self.layout_checks(v)

    def type_check(self, v: str, hoist: Hoist) -> tuple[str, str]:
        return f"type({v}) is not {hoist(self.type, self.type.__name__)}", f"type({self.source}) is {type_name(self.type)}"

    def value_checks(self, v: str, hoist: Hoist) -> list[tuple[str, str]]:
        """dtype, device, requires_grad, rank, static sizes and strides: what one C call can check
        for many tensors (guard_codegen's fast check batches them)."""
        src = self.source
        dtype = str(self.dtype).removeprefix("torch.")
        grad = f"{v}.requires_grad" if not self.requires_grad else f"not {v}.requires_grad"
        meta = f"{v}.dtype is not {hoist(self.dtype, dtype)} or {_device_differs(v, self.device, hoist)} or {grad}"
        out = [(meta, f"{src} is a {dtype} {self.device} tensor{'' if self.requires_grad else ' not'} "
                      "requiring grad")]
        bits = [f"{'not ' if self.neg else ''}{v}.is_neg()"]
        if self.dtype.is_complex:  # only a complex tensor has a conjugate bit
            bits.insert(0, f"{'not ' if self.conj else ''}{v}.is_conj()")
        out.append((" or ".join(bits), f"{src}.is_conj() is {self.conj} and {src}.is_neg() is {self.neg}"
                    if self.dtype.is_complex else f"{src}.is_neg() is {self.neg}"))
        if all(s is not None for s in self.sizes):
            out.append((f"{v}.shape != {tuple(self.sizes)!r}", f"{src}.size() == {tuple(self.sizes)!r}"))
        else:
            fixed = [(i, s) for i, s in enumerate(self.sizes) if s is not None]
            cond = " or ".join([f"{v}.dim() != {len(self.sizes)}"] + [f"{v}.shape[{i}] != {s}" for i, s in fixed])
            text = " and ".join([f"{src}.dim() == {len(self.sizes)}"] + [f"{src}.size({i}) == {s}" for i, s in fixed])
            out.append((cond, text))
        if self.strides is not None and all(s is not None for s in self.strides):
            out.append((f"{v}.stride() != {tuple(self.strides)!r}", f"{src}.stride() == {tuple(self.strides)!r}"))
        elif self.strides is not None and any(s is not None for s in self.strides):
            fixed = [(i, s) for i, s in enumerate(self.strides) if s is not None]
            out.append((" or ".join(f"{v}.stride({i}) != {s}" for i, s in fixed),
                        " and ".join(f"{src}.stride({i}) == {s}" for i, s in fixed)))
        return out

    def layout_checks(self, v: str) -> list[tuple[str, str]]:
        if self.contiguous is None:
            return []
        src = self.source
        return [(f"{'not ' if self.contiguous else ''}{v}.is_contiguous()",
                 f"{src} is {'' if self.contiguous else 'not '}contiguous")]

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return " or ".join(cond for cond, _ in self.checks(v, hoist))

    def sentence(self) -> str:
        sizes = ", ".join("*" if s is None else str(s) for s in self.sizes)
        grad = ", requires_grad" if self.requires_grad else ""
        bits = (", conjugated" if self.conj else "") + (", negated" if self.neg else "")
        return (f"{self.source} is a {str(self.dtype).removeprefix('torch.')} {self.device} "
                f"{self.type.__name__} of size ({sizes}){grad}{bits}")


def _device_differs(v: str, device: torch.device, hoist: Hoist) -> str:
    """The cheapest exact test that `v` is not on `device` (a torch.device is built on each read)."""
    if device.type == "cpu":
        return f"not {v}.is_cpu"
    if device.type == "cuda" and device.index is not None:
        return f"not {v}.is_cuda or {v}.get_device() != {device.index}"
    return f"{v}.device != {hoist(device, device.type)}"


@dataclass(frozen=True, eq=False)
class InferenceTensorGuard(Guard):
    """Whether an input tensor is an inference tensor (made under `torch.inference_mode()`): read by
    `Tensor.is_inference()`, which TensorGuard does not pin."""

    inference: bool

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{v}.is_inference() is not {self.inference}"

    def sentence(self) -> str:
        return f"{self.source} is {'' if self.inference else 'not '}an inference tensor"


@dataclass(frozen=True, eq=False)
class StrideGuard(Guard):
    """What a backend assumed about a tensor's strides beyond its TensorGuard (a non-contiguous
    input with dynamic sizes): the dims of stride 1, and how the other strides compare
    (`(p, "<", q)`: stride(p) < stride(q)), so the layout the kernels were made for still holds."""

    unit: tuple[int, ...] = ()
    order: tuple[tuple[int, str, int], ...] = ()

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source, self.unit, self.order)

    def _facts(self, v: str) -> list[str]:
        return [f"{v}.stride({d}) == 1" for d in self.unit] + [f"{v}.stride({p}) {op} {v}.stride({q})"
                                                              for p, op, q in self.order]

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return " or ".join(f"not ({fact})" for fact in self._facts(v)) or "False"

    def sentence(self) -> str:
        return f"{' and '.join(self._facts(str(self.source)))} (the kernels' layout)"


@dataclass(frozen=True, eq=False)
class ExactStridesGuard(Guard):
    """An input's exact strides, where Python read a layout (`stride()`, `is_contiguous()`) that
    follows from them: a contiguity guard leaves the strides of size-1 dims, and a non-contiguous
    input's layout, free."""

    strides: tuple[int, ...] = ()

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{v}.stride() != {self.strides!r}"

    def sentence(self) -> str:
        return f"{self.source}.stride() == {self.strides!r}"

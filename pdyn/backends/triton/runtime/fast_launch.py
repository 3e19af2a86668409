"""Triton's C launcher, called past its Python layers: what pdyn needs from the Triton and CUDA
runtime to launch a kernel it has launched once (the current device and stream, the launch hooks,
the C entry point), and whether this Triton's launcher has the layout pdyn knows.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from pdyn.base.config import config


class BoundLauncher(NamedTuple):
    """A variant's compiled launcher, kept after its first launch through Triton."""

    run: Any  # CompiledKernel.run: Triton's launcher with its Python layer
    function: Any  # the CUfunction handle
    metadata: Any  # packed metadata the launcher takes
    enter: Any  # launch hooks at bind time (None: none)
    leave: Any
    device: int  # the device it was compiled for
    direct: tuple | None  # (C launch, cooperative, pdl) where the C entry point can be called


class ReadyLaunch(NamedTuple):
    """A size's direct launch with everything but the pointers and the stream decided."""

    launch: Any
    g0: int
    g1: int
    g2: int
    device: int
    function: Any
    cooperative: Any
    pdl: Any
    metadata: Any
    tail: tuple  # int arguments, then constexprs


class FastLaunch:
    """Triton's launch path without JITFunction.run's per-call binding and specialization: after a
    variant's first launch through Triton, its CompiledKernel's launcher is called directly. Only
    used where the call would specialize exactly as that first one did (every pointer 16-byte
    aligned, every int argument an i32); anything else goes through Triton's own path."""

    def __init__(self) -> None:
        from triton import knobs
        from triton.runtime.driver import driver

        # NOTE: torch's own getter is the same answer as Triton's driver, without two Python layers
        self.device = getattr(torch._C, "_cuda_getDevice", None) or driver.active.get_current_device
        self.stream = driver.active.get_current_stream
        self.knobs = knobs.runtime
        self.direct = direct_launch_layout()

    def hooks(self) -> bool:
        """Whether launch hooks are installed (None or an empty HookChain means none)."""
        k = self.knobs
        enter, leave = k.launch_enter_hook, k.launch_exit_hook
        return bool(getattr(enter, "calls", enter) or getattr(leave, "calls", leave))


def make_fast_launch() -> FastLaunch | None:
    """The fast path where config.triton_fast_launch allows it and this Triton has the layout."""
    if not config.triton_fast_launch:
        return None
    try:
        return FastLaunch()
    except Exception:  # noqa: BLE001  # another Triton layout: Triton's own launch path
        return None


# The C launcher's leading arguments in the Triton releases whose CudaLauncher we call past:
# grid x/y/z, stream, function, cooperative, pdl, global and profile scratch, metadata,
# launch metadata, enter and exit hooks; then the kernel's arguments.
DIRECT_FORMAT = "iiiKKppOOOOOO"


def direct_launch_layout() -> bool:
    """Whether Triton's CUDA launcher has the C entry point whose arguments pdyn knows; then a
    launch skips the Python layer in front of it and passes pointers as integers, which also skips
    one driver query per pointer (pdyn has already checked the device by its guards)."""
    try:
        from triton.backends.nvidia import driver as nvidia
    except Exception:  # noqa: BLE001  # no CUDA backend in this Triton
        return False
    return getattr(nvidia, "_BASE_ARGS_FORMAT", None) == DIRECT_FORMAT


def direct_entry(launcher: Any) -> tuple | None:
    """(C launch, cooperative, pdl) of a bound CudaLauncher that needs no scratch memory, else None."""
    try:
        if launcher.global_scratch_size or launcher.profile_scratch_size:
            return None
        return launcher.launch, launcher.launch_cooperative_grid, launcher.launch_pdl
    except AttributeError:
        return None

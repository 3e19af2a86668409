"""Helpers of the CUDA-graph benchmarks: what pdyn's `cudagraphs` log said during a run, and an
eager model captured by hand into one CUDA graph per shape (the floor a replay is measured against)."""

from __future__ import annotations

import logging
from typing import Any

import torch


class CudagraphLog(logging.Handler):
    """Counts what pdyn's `cudagraphs` topic said during one column: captures, and why graphs ran
    uncaptured or were captured per size."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def summary(self) -> str:
        captures = sum(m.startswith("captured shape") for m in self.messages)
        reasons = sorted({m for m in self.messages if "uncaptured" in m or "padding" in m})
        per_size = len({m.split(":")[0] for m in self.messages if "captured per size" in m})
        return f"{captures} captures; {per_size} symbols captured per size; " + "; ".join(r[:160] for r in reasons[:4])


class HandCaptured:
    """The eager model captured by hand into one CUDA graph per shape (static inputs copied in,
    the graph replayed): the floor the issue's "1.5x of hand-captured" target is measured against."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.graphs: dict[Any, tuple[torch.cuda.CUDAGraph, dict[str, Any], Any]] = {}
        self.pool = torch.cuda.graph_pool_handle()

    def __call__(self, **kwargs: Any) -> Any:
        key = tuple((k, tuple(v.shape)) if isinstance(v, torch.Tensor) else (k, v) for k, v in kwargs.items())
        if key not in self.graphs:
            static = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.model(**static)  # warmup outside capture
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool):
                out = self.model(**static)
            self.graphs[key] = (graph, static, out)
        graph, static, out = self.graphs[key]
        for k, v in kwargs.items():
            if isinstance(v, torch.Tensor):
                static[k].copy_(v)
        graph.replay()
        return out

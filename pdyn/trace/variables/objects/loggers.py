"""A method of a `logging.Logger` read from the frame that only writes the log: called after the
graph, in program order with the trace's other side effects (user_objects.py makes it)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

# logging.Logger methods that answer something: every other one only writes the log
LOGGER_QUERIES = frozenset({"isEnabledFor", "getEffectiveLevel", "getChild", "hasHandlers", "findCaller",
                            "makeRecord", "filter", "getChildren"})


def writes_log(cls: type, name: str, attr: Any) -> bool:
    """Whether `attr`, the method `name` of the Logger subclass `cls`, only writes the log."""
    return issubclass(cls, logging.Logger) and name not in LOGGER_QUERIES and callable(attr)


class LoggerCallVariable(VariableTracker):
    """A method of a logging.Logger read from the frame (`logger.warning`, a `warning_once` a library
    added to Logger): it only writes the log, so the call is made after the graph, in program order
    with the trace's other side effects, with the same arguments; its value is None."""

    def __init__(self, logger: VariableTracker, name: str):
        self.logger = logger
        self.name = name

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        tx.ctx.side_effects.call(self, args, kwargs)
        return ConstantVariable(None)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        return f"{codegen.reconstruct(self.logger)}.{self.name}"

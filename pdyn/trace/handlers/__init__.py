"""Opcode handlers, one family per module; importing a module registers its handlers."""

from pdyn.trace.handlers import calls, containers, control, deletion, exceptions, locals, matching, ops, stack  # noqa: F401

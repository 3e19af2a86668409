"""bytecode: see docs/architecture.md."""

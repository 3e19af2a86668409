"""hook: see docs/architecture.md."""

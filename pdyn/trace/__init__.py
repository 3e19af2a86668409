"""trace: see docs/architecture.md."""

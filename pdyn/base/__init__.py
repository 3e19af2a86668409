"""Base: settings (config), the errors pdyn raises, log topics and counters. Imported by every
layer; imports no other part of pdyn. See docs/architecture.md."""

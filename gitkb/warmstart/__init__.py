"""Warm start: resolve the store's best same-hardware code, record outcomes, retract."""

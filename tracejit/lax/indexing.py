"""Indexing primitives: gather, scatter (set/add/mul/min/max), dynamic_slice, dynamic_update_slice."""
from __future__ import annotations

__all__: list[str] = []

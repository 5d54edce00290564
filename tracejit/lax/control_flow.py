"""Control-flow primitives: cond/switch, scan, while_loop (and fori_loop, map on top of them)."""
from __future__ import annotations

__all__: list[str] = []

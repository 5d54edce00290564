"""Shape manipulation of tracejit.numpy: reshape, transpose, stack/concatenate, split, tile, repeat, flip, roll, pad, ..."""
from __future__ import annotations

__all__: list[str] = []

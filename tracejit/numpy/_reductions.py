"""Reductions of tracejit.numpy: sum, mean, var, std, min/max, arg*, all/any, nan-variants, median, quantile, average, cumulative ops."""
from __future__ import annotations

__all__: list[str] = []

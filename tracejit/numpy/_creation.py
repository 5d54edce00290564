"""Array creation in tracejit.numpy: zeros/ones/full(_like), empty, eye, identity, arange, linspace, meshgrid, tri/tril/triu, ..."""
from __future__ import annotations

__all__: list[str] = []

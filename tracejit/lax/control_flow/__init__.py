"""Control flow: the primitives `cond`, `while` and `scan`, each defined with all of its rules
in one place (as JAX's lax/control_flow), and the user functions on top of them: cond/switch
(conditionals), while_loop/fori_loop and scan/map/associative_scan (loops)."""
from .conditionals import cond, cond_p, switch  # noqa: F401  (cond_p for the compiler)
from .loops import associative_scan, fori_loop, map, scan, scan_p, while_loop, while_p  # noqa: F401

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "associative_scan"]
from .solves import custom_linear_solve, custom_root, linear_solve_p, root_p  # noqa: F401

__all__ += ["custom_linear_solve", "custom_root"]

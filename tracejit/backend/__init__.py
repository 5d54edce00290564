"""Native backends: kernel plans to machine code."""
import sys

import llvmlite

# Our IR is written with opaque pointers (`ptr`), LLVM's only kind from LLVM 17 on. llvmlite
# 0.44 (LLVM 15) builds and parses typed pointers unless its flag is set, which its IR and
# binding modules read into globals of their own when imported: set it here, before any module
# of the backend imports them, and in those already imported (a test or a user may import
# llvmlite first). Newer llvmlite has no flag (opaque pointers only).
if getattr(llvmlite, "opaque_pointers_enabled", True) is False:
    llvmlite.opaque_pointers_enabled = True
    for _name in ("llvmlite.ir.types", "llvmlite.binding.context", "llvmlite.binding.typeref",
                  "llvmlite.binding.targets"):
        if _name in sys.modules:
            sys.modules[_name].opaque_pointers_enabled = True

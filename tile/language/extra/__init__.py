"""tile.language.extra: Triton's `triton.language.extra`.

    from tile.language.extra import libdevice          # as in Triton
    from tile.language.extra.cuda import libdevice     # Triton's backend path, the same functions

`libdevice` holds CUDA libdevice's math functions, written in tile language (see its docstring).
"""
from . import cuda, libdevice

__all__ = ["cuda", "libdevice"]

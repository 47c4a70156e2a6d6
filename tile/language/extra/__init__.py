"""tile.language.extra: Triton's `triton.language.extra`.

    from tile.language.extra import libdevice          # as in Triton
    from tile.language.extra.cuda import libdevice     # Triton's backend path, the same functions
    from tile.language.extra.cuda import globaltimer, smid, gdc_wait, ...   # NVIDIA-only helpers

`libdevice` holds CUDA libdevice's functions, written in tile itself (see its docstring).
"""
from . import cuda, libdevice

__all__ = ["cuda", "libdevice"]

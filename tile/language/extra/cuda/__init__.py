"""tile.language.extra.cuda: Triton's CUDA backend path for libdevice (the same functions as
tile.language.extra.libdevice, which run on every target)."""
from . import libdevice

__all__ = ["libdevice"]

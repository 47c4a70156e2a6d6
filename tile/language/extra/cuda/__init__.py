"""tl.extra.cuda: helpers for NVIDIA GPUs (Triton's tl.extra.cuda), and Triton's CUDA backend path
for libdevice (the same functions as tile.language.extra.libdevice, which run on every target)."""
from . import libdevice
from .gdc import gdc_launch_dependents, gdc_wait
from .utils import (convert_custom_float8_sm70, convert_custom_float8_sm80, globaltimer, num_threads, num_warps,
                    smid)

__all__ = ["libdevice", "globaltimer", "num_threads", "num_warps", "smid", "convert_custom_float8_sm70",
           "convert_custom_float8_sm80", "gdc_launch_dependents", "gdc_wait"]

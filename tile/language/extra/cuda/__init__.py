"""tl.extra.cuda: helpers for NVIDIA GPUs (Triton's tl.extra.cuda)."""
from .gdc import gdc_launch_dependents, gdc_wait
from .utils import (convert_custom_float8_sm70, convert_custom_float8_sm80, globaltimer, num_threads, num_warps,
                    smid)

__all__ = ["globaltimer", "num_threads", "num_warps", "smid", "convert_custom_float8_sm70",
           "convert_custom_float8_sm80", "gdc_launch_dependents", "gdc_wait"]

"""tl.extra: target-specific helpers (Triton's tl.extra); `tl.extra.cuda` for NVIDIA GPUs."""
from . import cuda

__all__ = ["cuda"]

"""tile.language.extra.cuda.libdevice: Triton's `triton.language.extra.cuda.libdevice` path to the
functions of tile.language.extra.libdevice."""
from ..libdevice import *  # noqa: F401,F403 - the same functions under Triton's second path
from ..libdevice import __all__  # noqa: F401

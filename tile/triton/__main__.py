"""`python -m tile.triton script.py [args]`: run a Triton program on tile, unchanged.

    python -m tile.triton 01-vector-add.py          # as `python 01-vector-add.py`, with tile as triton
    python -m tile.triton -m pytest test_kernels.py # as `python -m pytest test_kernels.py`
"""
from __future__ import annotations

import os
import runpy
import sys
from typing import Optional, Sequence

USAGE = ("usage: python -m tile.triton script.py [args...]\n"
         "       python -m tile.triton -m module [args...]\n"
         "Runs a Triton program with `import triton` resolved to tile (TRITON_* variables are honoured).")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not args else sys.stdout)
        return 2 if not args else 0
    from tile.triton import install_as_triton

    install_as_triton()
    if args[0] == "-m":
        if len(args) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = args[1:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        return 0
    script = args[0]
    if not os.path.isfile(script):
        print(f"python -m tile.triton: cannot open {script!r}: no such file", file=sys.stderr)
        return 2
    sys.argv = args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())

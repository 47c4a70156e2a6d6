"""tile's code generator: gpu IR -> simt IR (per-thread SSA) -> assembly text of one target.

    lower.py, lower_*.py   the lowering, written once for every target: each gpu-IR op family
                           becomes per-thread simt ops (lower_core holds the shared state, the
                           layout tables and the LOWERINGS registry); entry `lower.lower_to_simt`
    target.py              one record of facts per target name (instruction set, architecture,
                           warp size, address spaces, register classes, barriers, shuffles,
                           matrix instructions) and `emitter(name)`, the way to a target's emitter
    ptx/                   the PTX emitter (sm_80 ... sm_90a); a second instruction set is a
                           sibling folder, registered in target.EMITTERS
    floats.py, math_lib.py float bit patterns and the math functions, shared by every target

Data flows one way: this package imports tile.ir (and tile.opt), never the frontend or the
runtime; only target.py reaches a target's folder (tests/test_import_graph.py checks both).
"""

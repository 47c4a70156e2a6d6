"""tile's emulator: runs the PTX and the AMDGCN text tile emits on the CPU, with NumPy.

    tile.emulate(add_kernel, target="sm_80")[grid](x, y, out, n, BLOCK=1024)
    tile.emulate(add_kernel, target="gfx942")[grid](x, y, out, n, BLOCK=1024)   # AMDGCN, waves of 64
    tile.emulate(add_kernel, target="gfx1100")[grid](x, y, out, n, BLOCK=1024)  # RDNA3, waves of 32
    TILE_EMULATE=1 python tutorials/01_vector_add.py      # launches run here when there is no GPU
    TILE_EMULATE=1 TILE_EMULATE_TARGET=gfx942 python ...  # ... as gfx942 code
    tile.emulator.run_ptx(ptx_text, grid=(4,), args=[x, y, out, n])
    tile.emulator.run_amdgcn(amdgcn_text, grid=(4,), args=[x, y, out, n])

Why: the block interpreter runs tile IR, the meaning of a kernel. The emulator runs what the
compiler finally produced, instruction by instruction, so a bug anywhere between (layouts,
register naming, predicates, address arithmetic, vector widths, fragment orders, barriers)
shows up on a machine without a GPU, with the PTX line and the tile source line that caused it.

The machine model (what a student should picture)
---------------------------------------------------
*Threads and registers.* A launch is a grid of CTAs (thread blocks) of `ntid` threads. The
emulator runs a batch of CTAs at once (launch.BATCH_THREADS threads) and keeps every PTX
register as one NumPy array with an entry per thread of the batch: `%r5` is a uint32 array,
`%f3` the float32 bits in a uint32 array, `%p1` a bool array. A register holds bits; each
instruction reads them as its type says (`add.f32` views them as float32, `shl.b32` as uint32),
exactly as PTX registers are untyped storage. One instruction is one NumPy expression over the
threads, which is what makes the emulator fast enough for real kernels.

*Control flow.* Every thread has a program counter. While all live threads agree on it, the
machine is "uniform" and just steps. A branch whose predicate differs between threads makes
it "divergent": each step then runs the instruction at the smallest PC, for exactly the threads
that are there (min-PC scheduling). Code that branches forward around a block, or backward to
repeat a loop, reconverges on its own: threads that are ahead wait at the join until the others
catch up. A CTA that waits too long behind others (they spin on a lock it holds) gets to run
alone for a while, so spin locks across CTAs make progress; a batch that runs long yields its
turn to later batches of the grid, so a CTA may wait on a CTA that starts after it (a true
deadlock ends at the step budget, naming the line the threads spin on). `ret` retires threads. An
instruction guarded by a predicate (`@%p1 ld...`) runs only for threads whose predicate holds.

*Memories.* Global memory is the host memory of the arguments: a pointer parameter is the
address of the NumPy array, and every access is checked to lie inside one argument (the error
names the argument, the offset, the thread and the CTA). Shared memory is a byte array per
CTA; local memory a byte array per thread; parameters are read from the launch's values.
Accesses must be aligned to their size, as on a GPU.

*Warps.* Threads 32w..32w+31 of a CTA form warp w. shfl.sync, vote, ldmatrix and mma.sync
exchange values between the lanes of a warp and require every lane to take part.

*Barriers.* bar.sync must be reached by every live thread of the CTA: when some threads of a
CTA wait at a barrier while others are elsewhere (or skip it under a predicate), a GPU would
hang; the emulator reports the deadlock with both places. Named and counted barriers
(bar.sync 1, 128 / bar.arrive 1, 128) park their waiting threads until the count has
arrived, so producer and consumer warps run as on a GPU. Memory is sequentially consistent
(each instruction's stores are visible to the next), so fences cost nothing; atomics on one
address apply one thread at a time.

*Asynchronous copies.* cp.async reads global memory when issued and lands in shared memory
when cp.async.wait_group retires its group; a TMA load (cp.async.bulk.tensor) lands when an
mbarrier.try_wait sees its phase complete. Touching those bytes earlier is an error.

*Hopper.* wgmma.mma_async reads its operands through shared-memory matrix descriptors (with
the 32/64/128-byte swizzles) or A from registers; mbarriers count arrivals and transaction
bytes; host TensorDescriptors reach sm_90a kernels as tensor maps in the emulator's own
format (tensor_maps.py). See ptx_isa_hopper.

*Checks a GPU does not make* (checks.py): shared-memory races between barriers (the writer's
and the reader's PTX lines, tile source lines and threads), cp.async / TMA bytes used before
their wait, wgmma accumulators used before their wgmma.wait_group.

*Step-through.* `tile.emulate(kernel, trace=[0, 1, 32])` records what those threads did,
instruction by instruction (trace.py).

*Termination.* A kernel that runs more than `max_steps` instruction steps is reported with the
instruction its threads spin on, instead of hanging.

Layout of the package
---------------------
- program.py: the decoded form (Module, Kernel, Instr, operands as small tuples).
- ptx_decode.py: PTX text -> Module, cached by the text's hash; an unknown instruction is an
  error naming it and its PTX line.
- ptx_isa.py, ptx_isa_memory.py, ptx_isa_tc.py, ptx_isa_hopper.py: the instruction set as a
  table, opcode -> (decoder of its suffixes, executor); arithmetic / memory, warps, control /
  tensor cores, cp.async / wgmma, mbarrier, TMA.
- machine.py: registers, special registers, scheduling, barriers (plain, named, counted), the
  step budget.
- memory.py: global allocations and per-CTA shared memory, with bounds checks.
- checks.py: shared-memory races and early reads of asynchronous copies.
- tensor_maps.py: the emulator's TMA tensor maps.
- trace.py: step-through records of chosen threads.
- launch.py: run_ptx, tile.emulate, and the TILE_EMULATE hook of ordinary launches.

AMDGCN (gfx942, gfx90a, gfx1100), the second instruction set
-------------------------------------------------------------
- amdgcn_decode.py: the text tile emits for an AMD target -> AmdKernel (gfx1100's own
  spelling of instructions read back to the table's names) (instructions with their
  line and tile source line, the kernarg layout of the code-object metadata, LDS bytes,
  workgroup and wave size); operand counts come from the code generator's instruction table,
  and an unknown instruction is an error naming it and its line.
- amdgcn_machine.py: workgroups of waves of 64 or 32 lanes (the metadata's wave size) with SGPR and
  VGPR files, EXEC/VCC/SCC, loads that land at the s_waitcnt that drains them (touching their
  registers earlier is an error), LDS per workgroup, s_barrier, a step budget. It reuses the
  GlobalMemory above (bounds checks naming the argument) and SharedChecks (LDS races between
  waves, one CTA per workgroup). Unlike the PTX machine it runs one wave at a time, with one
  program counter per wave (divergence is EXEC, the compiler's business); resident
  workgroups take turns, so one may spin on a flag another sets.
- amdgcn_execute.py, amdgcn_isa.py: the executors and their arithmetic tables (CDNA3 ISA).
"""
from .amdgcn_decode import AmdgcnSyntaxError, decode_amdgcn
from .amdgcn_machine import run_amdgcn
from .errors import EmulatorError, PtxSyntaxError, StepBudgetError
from .launch import EMULATOR_PREFIX, emulate, run_ptx
from .ptx_decode import decode_module

__all__ = ["emulate", "run_ptx", "run_amdgcn", "decode_module", "decode_amdgcn", "EmulatorError", "PtxSyntaxError",
           "StepBudgetError", "AmdgcnSyntaxError", "EMULATOR_PREFIX"]

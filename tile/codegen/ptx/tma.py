"""PTX emission of the TMA and mbarrier simt ops (tile.ir.simt_ops' "tensor memory accelerator").

    simt.elect                                       ->  elect.sync _|%p3, -1;
    simt.mbarrier_init %bar, %p {count = 1}          ->  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;
    simt.mbarrier_expect_tx %bar, %p {bytes = 8192}  ->  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 8192;
    simt.tma_load %dst, %bar, %tmap, %p, %c0, %c1    ->  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global
                                                          .mbarrier::complete_tx::bytes [%r2], [%rd1, {%r3, %r4}], [%r1];
    simt.mbarrier_wait %bar, %phase                  ->  $L__k_1:  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], %r5;
                                                          @!%p2 bra.uni $L__k_1;
    simt.mbarrier_wait %bar, %phase, %p              ->  not.pred %p2, %p1;   (only where %p1 waits)
                                                          $L__k_1:  @!%p2 mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], %r5;
                                                          @!%p2 bra $L__k_1;
    simt.mbarrier_arrive %bar                        ->  mbarrier.arrive.shared::cta.b64 _, [%r1];
A tensormap value is the generic address of its kernel parameter (emit.py's parameter load:
`mov.b64 %rd1, k_param; cvta.param.u64 %rd1, %rd1;`), or of a map that the kernel wrote in global
memory:

    simt.tensormap_create %slot, %p, %w, %staging, %base, %d0, %d1, %s1 {box = [64, 64], elemtype = 6, swizzle = 3, fill = 0}
->
    mov.b32 %r9, 0;
    @%p1 st.shared.v4.b32 [%r2], {%r9, %r9, %r9, %r9};   ... eight times: every field starts as zero
    cvt.u64.u32 %rd8, %r2;
    @%p1 tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%rd8], %rd3;
    @%p1 tensormap.replace.tile.rank.shared::cta.b1024.b32 [%rd8], 1;                  // rank - 1
    @%p1 tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%rd8], 0, 64;          // per dimension,
    @%p1 tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%rd8], 0, %r4;      // innermost first
    @%p1 tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%rd8], 0, %rd5;  // bytes, outer dims
    @%p1 tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%rd8], 0, 1;
    @%p1 tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%rd8], 6;   ... interleave_layout, swizzle_mode, fill_mode
    @%p2 tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd2], [%rd8], 128;
    @%p2 fence.proxy.tensormap::generic.acquire.gpu [%rd2], 128;   // %p2: warp 0, every lane

PTX ISA 8.5 and older take the global strides divided by 16 (a ptxas quirk that Triton works
around the same way).
"""
from __future__ import annotations

from ...ir.core import Operation
from ...ir.tma_layouts import TENSOR_MAP_BYTES
from .emit import _Emitter, handles

TMA_TEMPLATES: dict[str, str] = {
    "simt.mbarrier_init": "{guard}mbarrier.init.shared::cta.b64 [{bar}], {count};",
    "simt.mbarrier_expect_tx": "{guard}mbarrier.arrive.expect_tx.shared::cta.b64 _, [{bar}], {bytes};",
    "simt.mbarrier_inval": "{guard}mbarrier.inval.shared::cta.b64 [{bar}];",
    "simt.mbarrier_arrive": "mbarrier.arrive.shared::cta.b64 _, [{bar}];",
    "simt.tma_load": "{guard}cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes "
                     "[{dst}], [{tmap}, {{{coords}}}], [{bar}];",
    "simt.tma_store": "{guard}cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [{tmap}, {{{coords}}}], [{src}];",
    "simt.bulk_commit": "cp.async.bulk.commit_group;",
    "simt.bulk_wait": "cp.async.bulk.wait_group{read} {pending};",
}


@handles(*TMA_TEMPLATES)
def _tma_op(e: _Emitter, op: Operation) -> None:
    fields: dict[str, object] = dict(op.attrs)
    regs = [e.src(v) for v in op.operands]
    if op.name == "simt.mbarrier_arrive":
        fields.update(bar=regs[0])
    elif op.name.startswith("simt.mbarrier"):
        fields.update(bar=regs[0], guard=e.guard(op.operand(1)))
    elif op.name == "simt.tma_load":
        fields.update(dst=regs[0], bar=regs[1], tmap=regs[2], guard=e.guard(op.operand(3)), rank=len(regs) - 4,
                      coords=", ".join(regs[4:]))
    elif op.name == "simt.tma_store":
        fields.update(src=regs[0], tmap=regs[1], guard=e.guard(op.operand(2)), rank=len(regs) - 3,
                      coords=", ".join(regs[3:]))
    elif op.name == "simt.bulk_wait":
        fields.update(read=".read" if op.attrs["read"] else "")
    e.emit(TMA_TEMPLATES[op.name].format(**fields))


@handles("simt.elect")
def _elect(e: _Emitter, op: Operation) -> None:
    e.emit(f"elect.sync _|{e.reg(op.result)}, -1;")


@handles("simt.mbarrier_wait")
def _mbarrier_wait(e: _Emitter, op: Operation) -> None:
    loop, done = e.label(), e.new_reg("p")
    wait = f"mbarrier.try_wait.parity.shared::cta.b64 {done}, [{e.src(op.operand(0))}], {e.src(op.operand(1))};"
    if op.num_operands == 2 or not e.guard(op.operand(2)):  # every thread waits
        e.emit(f"{loop}:")
        e.emit(wait)
        e.emit(f"@!{done} bra.uni {loop};")
        return
    e.emit(f"not.pred {done}, {e.src(op.operand(2))};")  # the threads that do not wait are done
    e.emit(f"{loop}:")
    e.emit(f"@!{done} {wait}")
    e.emit(f"@!{done} bra {loop};")


_REPLACE = "{guard}tensormap.replace.tile.{field}.shared::cta.b1024.{width} [{staging}], {args};"


@handles("simt.tensormap_create")
def _tensormap_create(e: _Emitter, op: Operation) -> None:
    box = op.attrs["box"]
    rank = len(box)
    slot, guard, warp, staging = e.src(op.operand(0)), e.guard(op.operand(1)), e.guard(op.operand(2)), e.src(op.operand(3))
    dims = [e.src(v) for v in op.operands[5:5 + rank]]
    strides = [e.src(v) for v in op.operands[5 + rank:]]
    if tuple(int(part) for part in e.ptx_version.split(".")) <= (8, 5):
        shifted = []
        for stride in strides:
            reg = e.new_reg("rd")
            e.emit(f"shr.s64 {reg}, {stride}, 4;")
            shifted.append(reg)
        strides = shifted
    zero = e.new_reg("r")
    e.emit(f"mov.b32 {zero}, 0;")
    for offset in range(0, TENSOR_MAP_BYTES, 16):
        e.emit(f"{guard}st.shared.v4.b32 [{staging}+{offset}], {{{zero}, {zero}, {zero}, {zero}}};")
    e.uses_smem = True
    wide = e.new_reg("rd")
    e.emit(f"cvt.u64.u32 {wide}, {staging};")

    def replace(field: str, args: str, width: str = "b32") -> None:
        e.emit(_REPLACE.format(guard=guard, field=field, width=width, staging=wide, args=args))

    replace("global_address", e.src(op.operand(4)), "b64")
    replace("rank", str(rank - 1))
    for i in range(rank):
        replace("box_dim", f"{i}, {box[i]}")
    for i in range(rank):
        replace("global_dim", f"{i}, {dims[i]}")
    for i, stride in enumerate(strides):
        replace("global_stride", f"{i}, {stride}", "b64")
    for i in range(rank):
        replace("element_stride", f"{i}, 1")
    replace("elemtype", str(op.attrs["elemtype"]))
    replace("interleave_layout", "0")
    replace("swizzle_mode", str(op.attrs["swizzle"]))
    replace("fill_mode", str(op.attrs["fill"]))
    e.emit(f"{warp}tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
           f"[{slot}], [{wide}], {TENSOR_MAP_BYTES};")
    e.emit(f"{warp}fence.proxy.tensormap::generic.acquire.gpu [{slot}], {TENSOR_MAP_BYTES};")
    e.emit(f"mov.b64 {e.reg(op.result)}, {slot};")

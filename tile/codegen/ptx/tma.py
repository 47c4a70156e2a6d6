"""PTX emission of the TMA and mbarrier simt ops (tile.ir.simt_ops' "tensor memory accelerator").

    simt.mbarrier_init %bar, %p {count = 1}          ->  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;
    simt.mbarrier_expect_tx %bar, %p {bytes = 8192}  ->  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 8192;
    simt.tma_load %dst, %bar, %tmap, %p, %c0, %c1    ->  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global
                                                          .mbarrier::complete_tx::bytes [%r2], [%rd1, {%r3, %r4}], [%r1];
    simt.mbarrier_wait %bar, %phase                  ->  $L__k_1:  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], %r5;
                                                          @!%p2 bra.uni $L__k_1;
A tensormap value is the generic address of its kernel parameter (emit.py's parameter load:
`mov.b64 %rd1, k_param; cvta.param.u64 %rd1, %rd1;`).
"""
from __future__ import annotations

from ...ir.core import Operation
from .emit import _Emitter, handles

TMA_TEMPLATES: dict[str, str] = {
    "simt.mbarrier_init": "{guard}mbarrier.init.shared::cta.b64 [{bar}], {count};",
    "simt.mbarrier_expect_tx": "{guard}mbarrier.arrive.expect_tx.shared::cta.b64 _, [{bar}], {bytes};",
    "simt.mbarrier_inval": "{guard}mbarrier.inval.shared::cta.b64 [{bar}];",
    "simt.tma_load": "{guard}cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes "
                     "[{dst}], [{tmap}, {{{coords}}}], [{bar}];",
    "simt.tma_store": "{guard}cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [{tmap}, {{{coords}}}], [{src}];",
    "simt.bulk_commit": "cp.async.bulk.commit_group;",
    "simt.bulk_wait_read": "cp.async.bulk.wait_group.read {pending};",
}


@handles(*TMA_TEMPLATES)
def _tma_op(e: _Emitter, op: Operation) -> None:
    fields: dict[str, object] = dict(op.attrs)
    regs = [e.src(v) for v in op.operands]
    if op.name.startswith("simt.mbarrier"):
        fields.update(bar=regs[0], guard=e.guard(op.operand(1)))
    elif op.name == "simt.tma_load":
        fields.update(dst=regs[0], bar=regs[1], tmap=regs[2], guard=e.guard(op.operand(3)), rank=len(regs) - 4,
                      coords=", ".join(regs[4:]))
    elif op.name == "simt.tma_store":
        fields.update(src=regs[0], tmap=regs[1], guard=e.guard(op.operand(2)), rank=len(regs) - 3,
                      coords=", ".join(regs[3:]))
    e.emit(TMA_TEMPLATES[op.name].format(**fields))


@handles("simt.mbarrier_wait")
def _mbarrier_wait(e: _Emitter, op: Operation) -> None:
    loop, done = e.label(), e.new_reg("p")
    e.emit(f"{loop}:")
    e.emit(f"mbarrier.try_wait.parity.shared::cta.b64 {done}, [{e.src(op.operand(0))}], {e.src(op.operand(1))};")
    e.emit(f"@!{done} bra.uni {loop};")

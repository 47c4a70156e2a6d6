

@tile.jit
def chunked_sum_kernel(x_ptr, out_ptr, n, CHUNKS: tl.constexpr, BLOCK: tl.constexpr):
    """Each program sums CHUNKS consecutive blocks: the bound check's uniform part is the loop's."""
    acc = tl.zeros((BLOCK,), tl.float32)
    for c in range(CHUNKS):
        offs = (tl.program_id(0) * CHUNKS + c) * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)


@pytest.mark.parametrize("target", TARGETS)
def test_buffer_loads_in_a_loop_take_the_induction_variable_into_the_resource(target):
    n, block, chunks, programs = 1000, 64, 4, 4
    x = RNG.standard_normal(n).astype(np.float32)
    out = poisoned(programs * block, np.float32)
    tile.emulate(chunked_sum_kernel, target=target)[(programs,)](x, out, n, CHUNKS=chunks, BLOCK=block)
    padded = np.zeros(programs * chunks * block)
    padded[:n] = x
    expected = padded.reshape(programs, chunks, block).sum(axis=1).ravel()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    ops = opcodes(amdgcn(chunked_sum_kernel, (x, out, n), target, CHUNKS=chunks, BLOCK=block))
    assert any(op.startswith("buffer_load") for op in ops) and not any(op.startswith("global_load") for op in ops)

"""Row softmax in Triton, one program per row, walking the row in BLOCK_N-wide tiles.

Pass one keeps a running maximum and a sum of exponentials rescaled whenever the
maximum grows (the online softmax), so the row is never held whole; pass two
reads the row again and writes exp(x - max) / sum. Arithmetic is float32
whatever the input dtype; the output has the input's dtype.

The three tunables are what the knobs provider sweeps (target.json
`tunables`): BLOCK_N (columns per tile, a power of two), NUM_WARPS (warps per
program) and NUM_STAGES (the launch's pipelining depth; whether the compiler
pipelines these plain loads depends on the Triton version, so it is measured,
not assumed). The shipped values are deliberately timid: narrow tiles on a
single warp.
"""

import torch
import triton
import triton.language as tl

BLOCK_N = 128
NUM_WARPS = 1
NUM_STAGES = 1


@triton.jit
def softmax_rows_kernel(
    out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    in_row = in_ptr + row * in_row_stride
    out_row = out_ptr + row * out_row_stride
    offsets = tl.arange(0, BLOCK)

    row_max = float("-inf")
    row_sum = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(in_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(row_max, tl.max(x, axis=0))
        row_sum = row_sum * tl.exp(row_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        row_max = new_max

    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        mask = cols < n_cols
        x = tl.load(in_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) / row_sum
        tl.store(out_row + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    """Softmax over the last dimension of a 2-D tensor (rows are independent)."""
    if x.dim() != 2:
        raise ValueError(f"softmax expects a 2-D tensor, got shape {tuple(x.shape)}")
    if x.stride(1) != 1:
        x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_rows_kernel[(rows,)](
        out,
        x,
        x.stride(0),
        out.stride(0),
        cols,
        BLOCK=BLOCK_N,
        num_warps=NUM_WARPS,
        num_stages=NUM_STAGES,
    )
    return out

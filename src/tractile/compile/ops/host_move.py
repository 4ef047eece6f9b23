"""The host's copy of an NCHW tensor into NHWC (``tl_host_move.h``): the Transpose the compiler's
channels-last layout puts after an image input, which ``tl_copy_blocks`` would move an element
at a time. Taken on the host target only, for 4-byte elements; the bits are copied."""
from __future__ import annotations

from ..emit import Emit

HEADER = "tl_host_move.h"


def nchw_to_nhwc(e: Emit, blocks: list[tuple], output, source, element: int) -> bool:
    """Emit the copy of ``source`` into ``output`` when its one copy block (``datamove.copy_blocks``)
    is a per-batch transpose of a channels x pixels matrix; False when not taken."""
    if e.target.name != "host" or element != 4 or len(blocks) != 1:
        return False
    dst_offset, index, src_offset, dims, dst_strides, src_strides = blocks[0]
    if dst_offset or src_offset or index != 0:
        return False
    dims, dst, src = list(dims), list(dst_strides), list(src_strides)
    batches = 1
    if len(dims) == 3:
        batches, size = dims[0], dims[1] * dims[2]
        if dst[0] != size or src[0] != size:
            return False
        dims, dst, src = dims[1:], dst[1:], src[1:]
    if len(dims) != 2:
        return False
    pixels, channels = dims
    if dst != [channels, 1] or src != [1, pixels] or batches * pixels * channels != output.count:
        return False
    e.use(HEADER)
    e.call("tl_nchw_to_nhwc_u32", f"(uint32_t *){e.arg(output)}", f"(const uint32_t *){e.arg(source)}", batches,
           channels, pixels)
    return True

"""The static memory planner: never worse than TFLite Micro's greedy-by-size, in place when allowed."""
from __future__ import annotations

import numpy as np
import pytest

from tractile.compile.memory import greedy_offsets, plan_memory
from tractile.compile.program import ARENA, CTensor, NodeCode, Overlap, Program
from tractile.datum import DatumType


def tflite_micro_greedy(buffers: list[tuple[int, int, int]], alignment: int = 16) -> int:
    """TFLite Micro's GreedyMemoryPlanner, written independently for the test: buffers sorted by
    size (largest first, then by first use), each placed at the lowest aligned offset where it
    overlaps in memory no placed buffer that is alive at the same time."""
    order = sorted(range(len(buffers)), key=lambda i: (-buffers[i][0], buffers[i][1]))
    placed: list[tuple[int, int, int, int]] = []
    high = 0
    for index in order:
        size, first, last = buffers[index]
        offset = 0
        while True:
            clash = [p for p in placed if p[2] <= last and first <= p[3] and p[0] < offset + size
                     and offset < p[0] + p[1]]
            if not clash:
                break
            offset = -(-max(p[0] + p[1] for p in clash) // alignment) * alignment
        placed.append((offset, size, first, last))
        high = max(high, offset + size)
    return high


def random_lifetimes(rng, count: int, steps: int) -> list[tuple[int, int, int]]:
    buffers = []
    for _ in range(count):
        first = int(rng.integers(0, steps))
        last = int(min(steps - 1, first + rng.integers(0, 4)))
        buffers.append((int(rng.integers(1, 300)) * 16, first, last))
    return buffers


@pytest.mark.parametrize("seed", range(40))
def test_greedy_offsets_never_worse_than_tflite_micro(seed):
    rng = np.random.default_rng(seed)
    buffers = random_lifetimes(rng, int(rng.integers(2, 25)), int(rng.integers(2, 15)))
    best = min(greedy_offsets(buffers, 16, order)[1] for order in ("size", "area", "first"))
    assert best <= tflite_micro_greedy(buffers)
    offsets, total = greedy_offsets(buffers, 16, "size")
    for i, (size_i, first_i, last_i) in enumerate(buffers):
        assert offsets[i] % 16 == 0 and offsets[i] + size_i <= total
        for j, (size_j, first_j, last_j) in enumerate(buffers[:i]):
            if first_i <= last_j and first_j <= last_i:
                assert offsets[i] + size_i <= offsets[j] or offsets[j] + size_j <= offsets[i]


def chain_program(sizes: list[int], in_place: bool) -> Program:
    """x -> t0 -> t1 -> ... : each node reads the previous tensor (which dies there)."""
    program = Program("chain")
    previous = CTensor("x", DatumType.I8, (sizes[0],), "input")
    program.tensors.append(previous)
    for step, size in enumerate(sizes[1:]):
        out = CTensor(f"t{step}", DatumType.I8, (size,), ARENA, first=step, last=step + 1)
        code = NodeCode(step, f"n{step}", "Op", "", inputs=[previous], outputs=[out])
        if in_place and previous.storage == ARENA:
            code.overlaps.append(Overlap(out, previous, 0))
        program.nodes.append(code)
        program.tensors.append(out)
        previous = out
    previous.last = len(sizes) - 2
    return program


def test_in_place_chain_needs_one_buffer():
    plain = plan_memory(chain_program([64, 64, 64, 64, 64], in_place=False), 16)
    assert plain.arena_bytes == 128 and plain.lower_bound_bytes == 128
    merged_program = chain_program([64, 64, 64, 64, 64], in_place=True)
    merged = plan_memory(merged_program, 16)
    assert merged.arena_bytes == 64 and merged.overlaps_used == 3
    assert {t.offset for t in merged_program.tensors if t.storage == ARENA} == {0}


def test_overlap_with_lag_places_the_input_after_the_output_start():
    program = chain_program([16, 32, 64, 16], in_place=False)
    expanding = program.nodes[1]
    expanding.overlaps.append(Overlap(expanding.outputs[0], expanding.inputs[0], 32))
    plan = plan_memory(program, 16)
    t0, t1 = program.nodes[0].outputs[0], program.nodes[1].outputs[0]
    assert t0.offset - t1.offset == 32
    assert plan.arena_bytes == 80 < plan.lower_bound_bytes == 96  # t1 (64) and t2 (16) at step 2


def test_overlap_is_ignored_when_the_input_lives_on():
    program = chain_program([32, 32, 32, 32], in_place=True)
    program.nodes[0].outputs[0].last = 2
    program.nodes[2].inputs.append(program.nodes[0].outputs[0])
    plan_memory(program, 16)
    t0, t1 = program.nodes[0].outputs[0], program.nodes[1].outputs[0]
    assert t0.offset != t1.offset

"""The quantized AddN (TFLite Micro's int8 ADD_N) as a loop written into the node's code, with
the multipliers and shifts the interpreter's recipe (``ops.quantized.add_n``) derived; sums
wrap as int32, as the kernel's do."""
from __future__ import annotations

from ...ops.add_n import AddN
from ...ops.quantized.add_n import LEFT_SHIFT, AddNRecipe
from ...ops.quantized.common import recipe_of
from ..emit import Emit
from ..registry import emitter


@emitter(AddN)
def add_n(e: Emit) -> None:
    recipe: AddNRecipe = recipe_of(e.op)
    inputs = [e.input(i) for i in range(len(e.node.inputs))]
    y = e.output(0)
    e.use("tl_common.h")

    def scaled(value: str) -> str:
        shifted = f"(int32_t)((uint32_t)((int32_t){value} + ({recipe.offset})) << {LEFT_SHIFT})"
        return f"tl_mbqm({shifted}, {recipe.input_multiplier}, {recipe.input_shift})"

    terms = "".join(f"\n  acc = (int32_t)((uint32_t)acc + (uint32_t){scaled(f'{x.var}[i]')});" for x in inputs)
    e.line(f"for (int32_t i = 0; i < {y.count}; ++i) {{\n"
           f"  int32_t acc = {scaled('0')};{terms}\n"
           f"  {y.var}[i] = (int8_t)tl_clamp_i32(tl_mbqm(acc, {recipe.output_multiplier}, {recipe.output_shift}) + "
           f"({recipe.zero}), {recipe.low}, {recipe.high});\n}}")
    for x in inputs:
        x.used = True
    y.used = True
    e.set_kernel("(loop)")

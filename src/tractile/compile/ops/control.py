"""If and Loop (TFLite's IF and WHILE, ONNX's If and Loop) as C blocks around their bodies.

An If becomes ``if (cond[0]) { then branch } else { else branch }``, each branch's results
copied into the If's outputs; a Loop becomes a ``for`` over its body, the loop-carried values
in the Loop's own outputs (copied in before, updated after each iteration), per-iteration
values stored into the scan outputs. Bodies are lowered inline (:mod:`..bodies`), so their
tensors are planned in the arena with the rest. A loop stops with an error status after
``NAME_MAX_LOOP_ITERATIONS`` iterations (the interpreter's ``max_loop_iterations`` when the
code was generated), as the interpreter raises past its limit.
"""
from __future__ import annotations

from ...datum import DatumType
from ...ops.base import Limits
from ...ops.control import If
from ...ops.control_loop import Loop
from ..bodies import body_model, buffer, copy_line, lower_body, step
from ..ctext import comment_text
from ..emit import Emit
from ..program import CTensor
from ..registry import Unsupported, emitter


def _check_results(results: list[CTensor], targets: list[CTensor], what: str) -> None:
    for slot, (result, target) in enumerate(zip(results, targets)):
        if result.dtype != target.dtype or result.nbytes != target.nbytes:
            raise Unsupported(f"{what} {slot} is {result.fact} but the node gives {target.fact}")


def _flag(tensor: CTensor, what: str) -> str:
    if tensor.count != 1:
        raise Unsupported(f"{what} must hold one value, got shape {tensor.shape}")
    tensor.used = True
    return f"{tensor.var}[0]"


@emitter(If)
def if_(e: Emit) -> None:
    op: If = e.op
    facts = [e.lowering.model.outlet_fact(o) for o in e.node.inputs]
    then_model = body_model(op.then_body, [facts[i] for i in op.then_inputs], "the then branch")
    else_model = body_model(op.else_body, [facts[i] for i in op.else_inputs], "the else branch")
    condition = _flag(e.input(0), "the condition")
    step(e, "if", [f"if ({condition}) {{"], inputs=[e.input(0)])
    results = lower_body(e, then_model, [e.input(i) for i in op.then_inputs], "then_branch")
    _check_results(results, e.outputs, "then branch output")
    copies = [f"  {line}" for out, result in zip(e.outputs, results) for line in copy_line(out, result)]
    step(e, "then branch's results, else", [*copies, "} else {"], inputs=results, outputs=e.outputs)
    results = lower_body(e, else_model, [e.input(i) for i in op.else_inputs], "else_branch")
    _check_results(results, e.outputs, "else branch output")
    for out, result in zip(e.outputs, results):
        for line in copy_line(out, result):
            e.line(f"  {line}")
    e.line("}")
    e.code.inputs.extend(results)
    e.set_kernel("(control)")


def _views(codes):
    """A function giving each tensor a representative shared by every tensor an alias of these
    steps may place in the same bytes (the planner may share them, or copy)."""
    parent: dict[int, CTensor] = {}

    def find(tensor: CTensor) -> CTensor:
        while id(tensor) in parent:
            tensor = parent[id(tensor)]
        return tensor

    for code in codes:
        for alias in code.aliases:
            target, source = find(alias.target), find(alias.source)
            if target is not source:
                parent[id(target)] = source
    return find


def _read(model, outlet) -> bool:
    """Whether a body reads one of its inputs (or gives it as an output)."""
    return bool(model.nodes[outlet.node].outputs[outlet.slot].successors) or outlet in model.outputs


def loop_cap(e: Emit) -> str:
    """The macro bounding every loop's iterations (defined once per model, overridable with -D)."""
    macro = f"{e.lowering.program.name.upper()}_MAX_LOOP_ITERATIONS"
    text = (f"/* {comment_text('the most iterations a loop of the model runs: invoke returns an error status past it')}"
            f" (tractile's max_loop_iterations when generated; define it to change) */\n"
            f"#ifndef {macro}\n#define {macro} {int(Limits.max_loop_iterations)}\n#endif")
    if text not in e.lowering.program.definitions:
        e.lowering.program.definitions.append(text)
    return macro


@emitter(Loop)
def loop(e: Emit) -> None:
    op: Loop = e.op
    if op.body.typed is None:
        raise Unsupported("the loop body is not typed for the loop's inputs")
    model = body_model(op.body, op.body.typed.input_facts, "the loop body")
    trip, cond, initial, extras = op._split(list(e.inputs))
    carried, scans = e.outputs[:op.carried], e.outputs[op.carried:]
    _check_results(list(initial), carried, "loop-carried value")
    counter, going = (buffer(e, role, dtype, tuple(int(d) for d in model.input_facts[slot].shape),
                             planned=_read(model, model.inputs[slot]))
                      for slot, role, dtype in ((0, "iteration", DatumType.I64), (1, "condition", DatumType.BOOL)))
    index, running = e.lowering.node_var(e.node.name, "i"), e.lowering.node_var(e.node.name, "running")
    cap = loop_cap(e)
    status = e.failure(f"the loop did not stop after {Limits.max_loop_iterations} iterations ({cap})")
    lines = [line for out, value in zip(carried, initial) for line in copy_line(out, value)]
    lines.append(f"int64_t {index} = 0;")
    test = [f"{index} < {trip.var}[0]"] if trip is not None else []
    if cond is not None:
        lines.append(f"uint8_t {running} = {_flag(cond, 'the loop condition')} != 0;")
        test.insert(0, running)
    if trip is not None:
        trip.used = True
    lines += [f"for (; {' && '.join(test) or '1'}; ++{index}) {{",
              f"  if ({index} >= {cap}) return {status};"]
    lines += [f"  {counter.var}[0] = {index};"] if counter.used else []
    lines += [f"  {going.var}[0] = 1;"] if going.used else []
    read_first = [t for t in (trip, cond, *initial) if t is not None]
    step(e, "loop", lines, inputs=read_first, outputs=[*carried, *scans, counter, going])
    inputs = [counter, going, *carried, *extras]
    start = len(e.lowering.program.nodes)
    results = lower_body(e, model, inputs, "body", depth=1)
    if len(results) != 1 + op.carried + len(scans):
        raise Unsupported(f"the loop body gives {len(results)} values, the loop expects {1 + op.carried + len(scans)}")
    _check_results(results[1:1 + op.carried], carried, "loop body output")
    if cond is not None:
        e.line(f"  {running} = {_flag(results[0], 'the loop body condition output')} != 0;")
    for out, result in zip(scans, results[1 + op.carried:]):  # before the carried values change
        if result.nbytes:
            out.used = result.used = True
            e.line(f"  memcpy({out.var} + {index} * {result.count}, {result.var}, {result.nbytes});")
    views = _views(e.lowering.program.nodes[start:])
    sources = list(results[1:1 + op.carried])
    staged = []
    for slot, result in enumerate(sources):
        if result.nbytes and any(views(result) is views(other) for other in carried if other is not carried[slot]):
            # another carried value (or a view of one), which the copies below could overwrite first
            stage = buffer(e, f"next_{slot}", result.dtype, result.shape, planned=False)
            stage.used = True  # planned as an output of this step
            for line in copy_line(stage, result):
                e.line(f"  {line}")
            sources[slot] = stage
            staged.append(stage)
    for out, result in zip(carried, sources):
        for line in copy_line(out, result, move=True):
            e.line(f"  {line}")
    e.line("}")
    e.code.inputs.extend([*inputs, *results])
    e.code.outputs.extend(staged)
    e.set_kernel("(control)")

"""``tractile convert``: load a model and write it back as a .tflite file."""
from __future__ import annotations

import argparse
import os

from ..errors import TractileError
from .common import console, escape


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "convert", help="write a TFLite model back as a .tflite file",
        description="Load MODEL (a .tflite file), optionally declutter and optimize it, and write it to "
                    "OUTPUT with tractile's FlatBuffers writer: tensors, quantization (per tensor and per "
                    "channel), constants, variable tensors and control-flow subgraphs. Only models made "
                    "of TFLite ops can be written; the result loads in the TFLite interpreter and gives "
                    "the same outputs. Loading fixes known quirks on the way (e.g. a per-channel bias "
                    "whose quantized dimension is out of range is written with dimension 0).")
    parser.add_argument("model", help="input model (.tflite)")
    parser.add_argument("output", help="output file (.tflite)")
    parser.add_argument("--optimize", action="store_true",
                        help="declutter and optimize before writing (folds constant subexpressions)")
    parser.add_argument("--flavour", choices=("reference", "micro"), default="reference",
                        help="integer kernel semantics to record (default: reference)")
    parser.set_defaults(handler=convert)


def convert(args: argparse.Namespace) -> int:
    from ..formats.detect import detect_format, format_name
    from ..formats.tflite import load_tflite, save_tflite

    out = console()
    written = os.path.splitext(str(args.output))[1].lower()
    if written != ".tflite":
        what = f"a {written} file" if written else "a file without an extension"
        raise TractileError(f"{args.output}: convert writes TFLite FlatBuffers only, not {what}; "
                            "name the output *.tflite")
    kind = detect_format(args.model)
    if kind != "tflite":
        raise TractileError(f"{args.model} is {format_name(kind)} model: convert writes TFLite models made of "
                            "TFLite ops, so it reads .tflite files only")
    model = load_tflite(args.model, flavour=args.flavour)
    if args.optimize:
        model = model.into_optimized()
    save_tflite(model, args.output)
    size = os.path.getsize(args.output)
    ops = sum(1 for node in model.nodes if node.op.name not in ("Source", "Const"))
    out.print(f"wrote [bold]{escape(str(args.output))}[/bold]: {ops} operators, {size} bytes", markup=True)
    return 0

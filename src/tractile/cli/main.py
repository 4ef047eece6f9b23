"""Entry point of the ``tractile`` command."""
from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import TractileError

#: command modules, in --help order; each has ``register(subparsers)``. Modules of
#: commands still being written may be absent and are then skipped.
COMMAND_MODULES = ("dump", "run", "profile", "compare", "stream", "compile", "batch", "convert", "conformance")


def _commands():
    for name in COMMAND_MODULES:
        try:
            yield importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__package__}.{name}":
                raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tractile",
        description="tractile: load, analyse, optimize and run neural-network models (ONNX) on NumPy.",
        epilog="Run 'tractile COMMAND --help' for the options of a command.")
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"tractile {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in _commands():
        command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return args.handler(args)
    except TractileError as error:
        sys.stderr.write(f"error: {type(error).__name__}: {error}\n")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

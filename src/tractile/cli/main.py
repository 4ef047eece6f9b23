"""Entry point of the ``tractile`` command."""
from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import TractileError
from ..formats.detect import FORMATS
from .common import printable

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
        description="tractile: load, analyse, optimize, stream, compile and run neural-network models on "
                    f"NumPy. Reads {FORMATS} models.",
        epilog="Run 'tractile COMMAND --help' for the options of a command.")
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"tractile {__version__}")
    parser.add_argument("--debug", action="store_true", help="on an error, show Python's traceback too")
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
    except BrokenPipeError:  # the reader went away (`tractile dump --json | head`): stop quietly
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        message = error_line(error)
        if message is None or args.debug:
            raise
        sys.stderr.write(f"error: {printable(message)}\n")
        return 2


def error_line(error: BaseException) -> str | None:
    """The one line a user sees for ``error``: what went wrong and what to do; None for a bug
    (an exception tractile does not expect), which keeps its traceback."""
    if isinstance(error, TractileError):
        return f"{type(error).__name__}: {error}"
    if isinstance(error, ModuleNotFoundError) and error.name:
        extra = {"rich": "cli", "matplotlib": "viz", "onnx": "onnx", "tflite": "tflite", "PIL": "image",
                 "soundfile": "audio", "ray": "ray", "threadpoolctl": "fast"}.get(error.name.split(".")[0])
        hint = f"pip install 'tractile[{extra}]'" if extra else f"pip install {error.name.split('.')[0]}"
        return f"this needs the Python package {error.name.split('.')[0]}: {hint}"
    if isinstance(error, OSError) and error.filename is not None:
        return f"{error.strerror or error}: {error.filename}"
    return None


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())

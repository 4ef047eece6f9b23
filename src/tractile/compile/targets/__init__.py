"""Microcontroller targets: boards, test firmware, emulated verification (see docs/COMPILE.md)."""
from .boards import BOARDS, DEFAULT_BOARDS, Board, board_for  # noqa: F401

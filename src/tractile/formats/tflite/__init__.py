"""TFLite front end: ``load_tflite`` reads .tflite FlatBuffers, ``save_tflite`` writes them."""
from .loader import load_tflite

__all__ = ["load_tflite", "save_tflite"]


def save_tflite(model, path) -> None:
    """Write a TypedModel made of TFLite ops as a .tflite file."""
    from .writer import save_tflite as save

    save(model, path)

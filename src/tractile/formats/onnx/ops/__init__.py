"""ONNX op translations, one module per family. Importing this package registers them all.

The list is explicit: a new family module must be added here.
"""
from . import (  # noqa: F401
    array,
    cast,
    control,
    image,
    indexing,
    linalg,
    logic,
    math,
    ml,
    nn,
    quant,
    random,
    recurrent,
    reduce,
    sequence,
    signal,
    text,
    training,
)

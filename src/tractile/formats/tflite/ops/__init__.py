"""TFLite operator translations, one module per family (imported here to register them)."""
from . import nn, shape  # noqa: F401

"""TFLite operator translations, one module per family (imported here to register them)."""
from . import array, control, elementwise, nn, recurrent, shape  # noqa: F401

"""TFLite operator translations, one module per family (imported here to register them)."""
from . import array, control, elementwise, nn, recurrent, resource, shape  # noqa: F401

"""TFLite operator translations, one module per family (imported here to register them)."""
from . import array, control, conv, dense, elementwise, recurrent, resize, resource, shape, signal, softmax  # noqa: F401

"""TFLite operator translations, one module per family (imported here to register them)."""
from . import (  # noqa: F401
    array,
    control,
    conv,
    dense,
    elementwise,
    recurrent,
    resize,
    resource,
    shape,
    signal,
    softmax,
)

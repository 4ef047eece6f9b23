"""TFLite operator translations, one module per family (imported here to register them)."""
from . import (  # noqa: F401
    activation,
    array,
    control,
    conv,
    dense,
    elementwise,
    layout,
    math,
    quantize,
    recurrent,
    reduce,
    resize,
    resource,
    shape,
    slicing,
    softmax,
)

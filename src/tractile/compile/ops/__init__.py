"""C emitters, one module per op family; importing this package registers them all."""
from . import (  # noqa: F401
    array,
    conv,
    dense,
    elementwise,
    fused,
    logic,
    pool,
    quantize,
    recurrent,
    reduce,
    rnn,
    shape,
    signal,
    softmax,
    stream,
)

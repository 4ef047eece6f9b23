"""TensorFlow op translations, one module per family (imported for their registrations)."""
from . import array, control, image, math, nn, reduce, tensor_list  # noqa: F401

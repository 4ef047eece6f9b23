"""TensorFlow front end tests (TensorFlow itself is the oracle)."""

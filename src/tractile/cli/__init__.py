"""The ``tractile`` command line."""

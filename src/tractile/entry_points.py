"""The implementations behind the model classes' methods that live in upper layers.

``tractile.model`` calls them through :mod:`tractile.hooks`; importing ``tractile`` imports
this module, which registers each one. The imports stay inside the functions, so that a
model that is never compiled or streamed does not load the compiler or the streaming code.
"""
from __future__ import annotations

from .hooks import provide


def _compile(model, **options):
    from .compile import compile_model

    return compile_model(model, **options)


def _declutter(model):
    from .passes import declutter

    return declutter(model)


def _optimize(model):
    from .passes import optimize

    return optimize(model)


def _plan(model, outputs=None):
    from .runtime.plan import SimplePlan

    return SimplePlan(model, outputs)


def _save_tflite(model, path) -> None:
    from .formats.tflite import save_tflite

    save_tflite(model, path)


def _pulse(model, symbol, size, outputs=None):
    from .pulse import pulse_model

    return pulse_model(model, symbol, size, outputs)


def _profile(model, inputs, **options):
    from .runtime.profile import profile

    return profile(model, inputs, **options)


def _report_html(source, path, **options):
    from .tools.html_report import write_report

    return write_report(source, path, **options)


for _name, _function in (("compile", _compile), ("declutter", _declutter), ("optimize", _optimize),
                         ("plan", _plan), ("save_tflite", _save_tflite), ("pulse", _pulse),
                         ("profile", _profile), ("report_html", _report_html)):
    provide(_name, _function)

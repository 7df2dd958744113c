"""``appstack.runtime`` is a library: its public names import from the package, documented."""

from __future__ import annotations

import inspect

from appstack import runtime


def test_every_public_name_is_exported_and_every_public_class_has_its_own_docstring() -> None:
    undocumented = []
    for name in runtime.__all__:
        value = getattr(runtime, name)  # AttributeError if __all__ names something missing
        if inspect.isclass(value) and not value.__dict__.get("__doc__"):
            undocumented.append(name)
    assert undocumented == []


def test_what_a_controller_needs_is_public() -> None:
    needed = {
        "Client", "Cache", "Manager", "Builder", "Request", "Result", "Reconciler", "Resource",
        "EventRecorder", "Clock", "RealClock", "TerminalError", "ApiError", "NotFound",
        "Conflict", "AlreadyExists", "Invalid", "Forbidden", "Gone", "TooManyRequests",
    }  # fmt: skip
    assert needed <= set(runtime.__all__)

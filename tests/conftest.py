"""Shared test configuration: the local control plane fixtures (see appstack_testbed), and
the CEL engine the models' tests need.

The fixtures come from the test bed's pytest plugin (appstack_testbed.pytest_plugin), loaded
through its pytest11 entry point.
"""

from __future__ import annotations

import pytest


def pytest_sessionstart(session: pytest.Session) -> None:
    """The models refuse what admission refuses by evaluating the CRDs' CEL rules
    (appstack.sdk.cel): without the engine, every test of a refusal would fail, each for the
    same reason. Say it once instead."""
    from appstack.sdk import cel  # noqa: PLC0415 - after pytest's own set-up

    if not cel.available():
        raise pytest.UsageError(
            "the tests need the CEL engine: pip install -e '.[dev]' (the cel extra: "
            "cel-expr-python, Python 3.11+ on Linux x86-64, macOS arm64 or Windows)"
        )

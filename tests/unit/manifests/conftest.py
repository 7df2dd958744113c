"""Fixtures of the manifests' unit tests: the test bed's helm (:mod:`.helm_chart`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.manifests.helm_chart import helm_binary


@pytest.fixture(scope="module")
def helm() -> Path:
    """The test bed's helm binary (built once; the test skipped without a test bed)."""
    return helm_binary()

"""A directory's files as their digests, for tests that check a command wrote nothing, or
only what it should: the scaffolder's unit and e2e tests compare two of them."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_digests(directory: Path, skip: tuple[str, ...] = ("__pycache__",)) -> dict[str, str]:
    """Every file under ``directory`` (its path relative to it) → its SHA-256, leaving out
    those inside a folder named in ``skip`` (Python's caches by default)."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not any(part in skip for part in p.parts)
    }

"""Where the repository is, for tests that read its files (deploy/, charts/, docs/,
examples/, bench/) wherever in tests/ they sit."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

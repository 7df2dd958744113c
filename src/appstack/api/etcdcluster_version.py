"""Which ``spec.version`` changes of an EtcdCluster are allowed (:data:`VERSION_RULES`,
CEL transition rules at admission, and :func:`version_change_problem`, the same test in
Python). Used by :mod:`appstack.api.etcdcluster`.

etcd changes minor versions one at a time and only upwards by replacing the binary: a
member of 3.6 refuses to start on a data directory whose storage version is newer than
it understands, and going back (3.6 → 3.5) needs ``etcdctl downgrade enable`` first; a
skipped minor (3.4 → 3.6) is not supported either. So a change that lowers the minor, or
raises it by more than one, is refused with a message naming ``.version``; a patch
change within a minor (3.6.16 → 3.6.15) is allowed both ways.
"""

from __future__ import annotations

from typing import Any

DOWNGRADE = (
    "etcd cannot go back a minor version by changing the image (3.6 -> 3.5 needs "
    "'etcdctl downgrade'); only patch versions of the running minor may be lower"
)
SKIP = "etcd upgrades one minor version at a time (3.4 -> 3.5 -> 3.6): do each in turn"


def _minor(version: str) -> str:
    """CEL: ``major * 1000 + minor`` of the version string ``version``."""
    return f"(int({version}.split('.')[0]) * 1000 + int({version}.split('.')[1]))"


_BOTH = "!has(self.version) || !has(oldSelf.version)"
VERSION_RULES: list[Any] = [
    {
        "rule": f"{_BOTH} || {_minor('self.version')} >= {_minor('oldSelf.version')}",
        "message": DOWNGRADE,
        "fieldPath": ".version",
    },
    {
        "rule": f"{_BOTH} || {_minor('self.version')} <= {_minor('oldSelf.version')} + 1",
        "message": SKIP,
        "fieldPath": ".version",
    },
]


def minor(version: str) -> tuple[int, int]:
    """``(major, minor)`` of ``3.6.16``."""
    major, minor_, *_ = (int(part) for part in version.split("."))
    return major, minor_


def version_change_problem(old: str, new: str) -> str | None:
    """Why going from ``old`` to ``new`` is refused, or None (same test as the CEL)."""
    before, after = minor(old), minor(new)
    if after < before:
        return DOWNGRADE
    if after[0] * 1000 + after[1] > before[0] * 1000 + before[1] + 1:
        return SKIP
    return None

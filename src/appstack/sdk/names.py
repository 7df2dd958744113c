"""Names and references, checked the way the API server would check what we derive from them
(pure, no I/O).

* Patterns for the names Kubernetes uses: :data:`DNS_1035` (Service names), :data:`DNS_LABEL`,
  :data:`DNS_SUBDOMAIN` (most object names; :data:`ObjectName` for a reference to a Secret,
  ConfigMap, ServiceAccount, StorageClass), and :data:`IMAGE`, close to the container image
  reference grammar (distribution/reference): lowercase repository path, optional registry
  host and port, tag, digest; no whitespace, no empty tag.
* :class:`NameRule`: a rule on ``metadata.name`` of a custom object, as a CEL expression at the
  root of the CRD schema (admission, and the models client-side), or as a Python check where
  CEL would cost too much, so every child derived from the name is a valid name of its kind.
  Each kind lists its rules as ``NAME_RULES`` (:class:`appstack.sdk.kind.CustomObject`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

DNS_1035 = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"{_HOST_PART}(?:\.{_HOST_PART})*(?::[0-9]+)?"
TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
IMAGE = rf"^(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::{TAG})?(?:@{_DIGEST})?$"

ObjectName = Annotated[str, Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN)]
Image = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1024,
        pattern=IMAGE,
        description="Container image reference, e.g. nginx:1.27 or registry:5000/team/app@sha256:…",
    ),
]


@dataclass(frozen=True)
class NameRule:
    """A rule on ``metadata.name``, written once: as ``cel`` (put at the root of the CRD
    schema, so enforced at admission, and evaluated client-side by the models through
    :mod:`appstack.sdk.cel`), or — for a rule whose CEL would cost more than the API server
    allows — as ``check(name, spec)``, run by the models and when the object is reconciled
    (``Ready=False``, ``InvalidSpec``). ``message`` says what is wrong and why."""

    cel: str | None
    message: str
    check: Callable[[str, Any], bool] | None = None

    def __post_init__(self) -> None:
        if (self.cel is None) == (self.check is None):
            raise ValueError(f"a name rule is CEL or a check, exactly one: {self.message}")

    def schema(self) -> dict[str, str]:
        """The CEL rule (no fieldPath: a CRD schema cannot name metadata fields)."""
        assert self.cel is not None  # noqa: S101 - callers skip rules without CEL
        return {"rule": self.cel, "message": self.message}


_SPELLING = {
    DNS_1035: "start with a lowercase letter and contain only lowercase letters, digits and '-'",
    DNS_LABEL: "contain only lowercase letters, digits and '-', and start and end with one",
}


def name_rules(pattern: str, max_length: int, why: str) -> tuple[NameRule, ...]:
    """``metadata.name`` matches ``pattern`` (:data:`DNS_1035` or :data:`DNS_LABEL`) and has
    at most ``max_length`` characters; ``why`` names what is derived from it."""
    return (
        NameRule(
            f"self.metadata.name.matches('{pattern}')",
            f"metadata.name must {_SPELLING[pattern]}: {why}",
        ),
        NameRule(
            f"size(self.metadata.name) <= {max_length}",
            f"metadata.name must be at most {max_length} characters: {why}",
        ),
    )

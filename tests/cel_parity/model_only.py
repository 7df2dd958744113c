"""What only the models refuse (pure data): checks with no CEL rule — over the API server's
CEL cost budget, or reported as a condition by design — each a change of a base object of
the parity table that the API server accepts and the models refuse, saying ``says``. Read
by tests/unit/api/test_cel_parity.py and tests/e2e/test_cel_parity.py, so the list of known
one-sided checks is tested, not just written down (docs/design.md, "CEL parity")."""

from __future__ import annotations

from dataclasses import dataclass

from tests.cel_parity.table import Edits


@dataclass(frozen=True)
class ModelOnly:
    kind: str
    edits: Edits
    says: str
    why: str


_COST = "its CEL costs more than the API server allows"
_BOUNDS = "values outside a field's bounds: Ready=False, InvalidSchedule, by design"
_FORM = "an item's form beyond its characters: Ready=False, InvalidSchedule, by design"

MODEL_ONLY: tuple[ModelOnly, ...] = (
    ModelOnly(
        "AppStack",
        (("spec.components[1].serviceName", "shop-web"),),
        "may not start with '<stack>-'",
        _COST,
    ),
    ModelOnly("AppStack", (("spec.components[0].env", {"DB_HOST": "x"}),), "is injected", _COST),
    ModelOnly("AppStack", (("spec.components[0].dependsOn", ["web"]),), "dependency cycle", _COST),
    ModelOnly(
        "AppStack",
        (("spec.middleware[2].external.url", "https://[::1/uuc"),),
        "Invalid IPv6 URL",
        "Python's urlsplit refuses an unbalanced IPv6 bracket; no CEL rule looks for one",
    ),
    ModelOnly(
        "AppService",
        (("spec.nodeSelector", {"disk type": "ssd"}),),
        "is not a label key",
        "a CRD schema cannot bound a map's keys (no maxLength, no pattern): a CEL rule matching "
        "each key risks the API server's cost estimate; nodeSelector's values have the label "
        "value pattern in the schema",
    ),
    ModelOnly(
        "AppStack",
        (("spec.components[1].nodeSelector", {"x/y/z": "ssd"}),),
        "is not a label key",
        "as for AppService's nodeSelector",
    ),
    ModelOnly("CronTab", (("spec.cronSpec", "*/5 * * * 7"),), "outside 0-6", _BOUNDS),
    ModelOnly("CronTab", (("spec.cronSpec", "0 0 L * *"),), "'L' is outside 1-31", _BOUNDS),
    ModelOnly("CronTab", (("spec.cronSpec", "*/15-30 * * * *"),), "is not a value", _FORM),
    ModelOnly("EtcdCluster", (("spec.backup.schedule", "0 25 * * *"),), "outside 0-23", _BOUNDS),
)

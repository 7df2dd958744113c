"""Every controller of the operator, in one list: :data:`ALL`.

The operator process (:mod:`appstack.operator`), the generated CRDs and RBAC
(:mod:`appstack.manifests`), ``appstack render`` (:mod:`appstack.cli.render`), the CLI help
and the e2e fixtures iterate over it. Adding a kind is one api module, one controller
package and one line here (see docs/design.md, "Adding a kind").
"""

from __future__ import annotations

from appstack.controllers import appservice, appstack, crontab, etcdcluster, mongodbcommunity
from appstack.sdk.kit.registration import Registration

ALL: tuple[Registration, ...] = (
    appservice.CONTROLLER,
    appstack.CONTROLLER,
    crontab.CONTROLLER,
    etcdcluster.CONTROLLER,
    mongodbcommunity.CONTROLLER,
)


def by_kind(kind: str) -> Registration | None:
    """The controller of custom kind ``kind`` (e.g. ``AppService``), if any."""
    return next((c for c in ALL if c.kind.kind == kind), None)

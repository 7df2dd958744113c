"""Every controller of the operator, in one list: :data:`ALL`; what its cache keeps of
each kind they share, in one table: :data:`CACHE`.

The operator process (:mod:`appstack.operator`), the generated CRDs and RBAC
(:mod:`appstack.manifests`), ``appstack render`` (:mod:`appstack.cli.render`), the CLI help
and the e2e fixtures iterate over it. Adding a kind is one api module, one controller
package and one line here (see docs/design.md, "Adding a kind").
"""

from __future__ import annotations

from appstack.api.kind import GROUP
from appstack.controllers import (
    appservice,
    appstack,
    crontab,
    etcdcluster,
    mongodbcommunity,
)
from appstack.runtime import CONFIG_MAP, SECRET, Resource, Transform
from appstack.sdk import (
    CHILD_TRANSFORMS,
    CLAIM_TRANSFORMS,
    Registration,
    bounded_metadata,
    job_transforms,
    metadata_only,
    pod_transforms,
    secret_metadata,
)

ALL: tuple[Registration, ...] = (
    appservice.CONTROLLER,
    appstack.CONTROLLER,
    crontab.CONTROLLER,
    etcdcluster.CONTROLLER,
    mongodbcommunity.CONTROLLER,
)

#: What the cache keeps of each kind the controllers read, their own kinds too: one
#: transform per kind for the whole process (the cache of a kind is shared). The rest of
#: the cache's table — label selectors, whose children are kept in full — is derived from
#: :data:`ALL` by :func:`appstack.sdk.kit.caching.cache_policy`.
CACHE: dict[Resource, Transform] = {
    # our kinds: spec and status; of their labels and annotations only the recommended labels
    # and our group's (an EtcdCluster's backup request) — none other is read, and whoever
    # may create one may give it 1.3 MB of them (issue #46)
    **{
        c.kind.resource: bounded_metadata(("app.kubernetes.io/", f"{GROUP}/"), (f"{GROUP}/",))
        for c in ALL
    },
    **pod_transforms(GROUP),  # pods: status, owners and the spec fields read
    **CHILD_TRANSFORMS,  # Deployments, Services, StatefulSets: what our apply set
    **CLAIM_TRANSFORMS,  # EtcdCluster's member volumes
    **job_transforms(GROUP),  # CronTab's and EtcdCluster's Jobs
    CONFIG_MAP.metadata_only(): metadata_only,  # a user's ConfigMaps an AppStack names
    SECRET.metadata_only(): secret_metadata,  # a user's Secrets a spec names
}


def by_kind(kind: str) -> Registration | None:
    """The controller of custom kind ``kind`` (e.g. ``AppService``), if any."""
    return next((c for c in ALL if c.kind.kind == kind), None)

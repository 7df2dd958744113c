"""A MongoDBCommunity's status from its StatefulSet and what the reconcile found (pure):
``phase`` as the community operator reports it (``Running`` every member ready, ``Pending``
still starting, ``Failed`` a problem the user must fix), the ``Ready`` condition with the
reason, the ready ``members``, ``replicas`` and ``selector`` for the scale subresource, the
users' connection-string Secrets, and ``observedGeneration``.
"""

from __future__ import annotations

from typing import Any, Literal

from appstack.api.mongodbcommunity import MongoDBCommunityStatus, UserStatus
from appstack.controllers.mongodbcommunity import desired
from appstack.controllers.util.workloads import statefulset_ready
from appstack.sdk import KubeObject, Problem, Truth, condition, label_selector, previous_conditions


def observed(
    obj: KubeObject,
    sts: dict[str, Any] | None,
    problem: Problem | None,
    now: str,
    *,
    users: list[UserStatus] | None = None,
    mongo_uri: str | None = None,
) -> MongoDBCommunityStatus:
    meta = obj["metadata"]
    generation = meta.get("generation")
    ready, count = statefulset_ready(sts)
    sts_status = (sts or {}).get("status") or {}
    phase: Literal["Running", "Pending", "Failed"]
    state: Truth
    if problem is not None:
        phase, state, reason, message = "Failed", "False", problem.reason, problem.message
    elif ready:
        phase, state, reason = "Running", "True", "Running"
        message = f"{count} members ready"
    else:
        phase, state, reason = "Pending", "False", "Progressing"
        message = f"{count} members ready"
    out = MongoDBCommunityStatus(
        phase=phase,
        members=int(sts_status.get("readyReplicas") or 0),
        replicas=int(sts_status.get("replicas") or 0),
        selector=label_selector(desired.selector(meta["name"])),
        version=(obj.get("spec") or {}).get("version"),
        observed_generation=generation,
        conditions=[
            condition(
                "Ready",
                state,
                reason,
                message,
                generation=generation,
                previous=previous_conditions(obj),
                now=now,
            )
        ],
    )
    if mongo_uri is not None:
        out.mongo_uri = mongo_uri
    if users is not None:
        out.users = users
    return out

"""Reconcile one MongoDBCommunity: its generated Secrets once, the replica set's children and
each user's connection-string Secret by server-side apply, children no longer wanted pruned,
then status.

Each user's password Secret is read by name when the object is reconciled (never cached:
the Secrets the spec names are watched as metadata only, so one appearing or changing
wakes the object). A missing Secret, or one without the key, is ``Ready=False`` (reason
``PasswordSecretNotFound`` / ``PasswordSecretKeyNotFound`` naming it) with a Warning Event
once per new message, and is not retried: its creation wakes the object. The replica set
is still built meanwhile (the members skip that user until the kubelet mounts its Secret).
Deletion is left to the garbage collector (everything is owned, the claims go with the
StatefulSet).
"""

from __future__ import annotations

import base64
from typing import Any, ClassVar

from appstack.api.mongodbcommunity import (
    MongoDBCommunity,
    MongoDBCommunitySpec,
    MongoDBCommunityStatus,
    User,
    UserStatus,
)
from appstack.controllers.mongodbcommunity import desired, scram, status, users
from appstack.controllers.util.meta import CHILD_SELECTOR
from appstack.runtime import (
    CONFIG_MAP,
    PDB,
    SECRET,
    SERVICE,
    STATEFUL_SET,
    IndexFunc,
    NotFound,
    Resource,
    Result,
    controller_key,
)
from appstack.sdk import (
    COMPONENT_LABEL,
    REFERENCES,
    KindReconciler,
    KubeObject,
    Manifest,
    Problem,
    now_rfc3339,
    reference,
)

_WATCHED = frozenset({"PasswordSecretNotFound", "PasswordSecretKeyNotFound"})


def referenced(obj: dict[str, Any]) -> list[str]:
    """Index values of ``obj``: the password Secrets its users name."""
    namespace = obj["metadata"].get("namespace")
    names = {
        u.get("passwordSecretRef", {}).get("name")
        for u in (obj.get("spec") or {}).get("users") or []
        if isinstance(u, dict)
    }
    return sorted(reference(SECRET.kind, namespace, n) for n in names if isinstance(n, str))


class MongoDBCommunityReconciler(KindReconciler[MongoDBCommunitySpec]):
    """MongoDBCommunity → replica set children + connection Secrets → status."""

    kind = MongoDBCommunity.KIND
    owns = (STATEFUL_SET, SERVICE, CONFIG_MAP, PDB, SECRET)
    # The cache holds only the Secrets it applies (connection strings, SCRAM credentials),
    # not every Secret labelled ours (other kinds' generated credentials); the generated
    # keyfile and administrator Secrets are created once, read by name.
    selectors: ClassVar[dict[Resource, str]] = {
        SECRET: f"{CHILD_SELECTOR},{COMPONENT_LABEL} in ({users.COMPONENT},{scram.COMPONENT})"
    }
    references = (SECRET.metadata_only(),)
    indexers: ClassVar[dict[Resource, dict[str, IndexFunc]]] = {
        MongoDBCommunity.KIND.resource: {REFERENCES: referenced},
    }

    def invalid_status(self, obj: KubeObject, problem: Problem) -> MongoDBCommunityStatus:
        return status.observed(obj, None, problem, now_rfc3339())

    async def apply(self, obj: KubeObject, spec: MongoDBCommunitySpec) -> Result | None:
        problems: list[Problem] = []
        for secret in desired.generated_secrets(obj):
            problem = await self.writer.create_once(obj, SECRET, secret, "generated")
            if problem is not None:
                problems.append(problem)
        meta = obj["metadata"]
        existing = self.cache.get(STATEFUL_SET, f"{meta['namespace']}/{meta['name']}")
        wanted = desired.children(obj, spec, desired.claim_of(existing))
        user_status: list[UserStatus] = []
        for i, user in enumerate(spec.users):
            password = await self._password(obj, i, user, problems)
            entry = UserStatus(name=user.name, db=user.db)
            if password is not None:
                secret = users.connection_secret(obj, spec.members, user, password)
                wanted += [secret, *scram.secret(obj, user, password)]
                entry.connection_string_secret_name = secret["metadata"]["name"]
            user_status.append(entry)
        synced, found = await self.writer.sync_all(obj, wanted)
        problems += found
        await self._prune(obj, wanted)
        first = problems[0] if problems else None
        if first is not None:
            await self.writer.report_new(obj, first)
        observed = status.observed(
            obj,
            synced.one("StatefulSet"),
            first,
            now_rfc3339(),
            users=user_status,
            mongo_uri=users.mongo_uri(obj, spec.members),
        )
        await self.writer.write_status(obj, observed)
        if any(p.reason not in _WATCHED for p in problems):
            return Result(requeue=True)
        return None

    async def _password(
        self, obj: KubeObject, index: int, user: User, problems: list[Problem]
    ) -> str | None:
        """The user's password, read by name (None and a problem when it cannot be)."""
        ref = user.password_secret_ref
        where = f"spec.users[{index}] ({user.name}): passwordSecretRef"
        try:
            secret = await self.client.get(SECRET, ref.name, obj["metadata"]["namespace"])
        except NotFound:
            problems.append(
                Problem("PasswordSecretNotFound", f"{where}: Secret {ref.name} not found")
            )
            return None
        value = (secret.get("data") or {}).get(ref.key)
        if value is None:
            problems.append(
                Problem(
                    "PasswordSecretKeyNotFound",
                    f"{where}: Secret {ref.name} has no key {ref.key}",
                )
            )
            return None
        return base64.b64decode(value).decode()

    async def _prune(self, obj: KubeObject, wanted: list[Manifest]) -> None:
        """Delete children no longer wanted (a removed user's Secret, the budget of a single
        member); the generated Secrets are kept."""
        meta = obj["metadata"]
        keep = {(o["kind"], o["metadata"]["name"]) for o in wanted}
        keep |= {("Secret", s["metadata"]["name"]) for s in desired.generated_secrets(obj)}
        for resource in self.owns:  # (Secrets: those of the narrower selector only)
            key = controller_key(meta["namespace"], meta["uid"])
            for child in self.cache.by_index(resource, "controller-uid", key):
                if (resource.kind, child["metadata"]["name"]) not in keep:
                    await self.writer.prune(obj, resource, child, "no longer in spec")

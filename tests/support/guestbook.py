"""A tutorial's operator that is not appstack, for the tests of what the SDK generates for
any operator (its install, its admission guards): the guestbook of ``webapp.example.com``,
one kind whose spec asks for a ``securityContext`` (the SDK's model, as a user's kind
gets it), one controller owning ConfigMaps,
Secrets, Deployments and Services, with a finalizer — as a scaffolded project's
``make manifests`` sees it (:class:`appstack.sdk.config.Project`)."""

from __future__ import annotations

from pydantic import Field

from appstack.runtime.controller import Result
from appstack.runtime.resources import CONFIG_MAP, DEPLOYMENT, SECRET, SERVICE
from appstack.sdk import (
    CustomObject,
    KindReconciler,
    KubeModel,
    KubeObject,
    OperatorIdentity,
    Problem,
    Registration,
    SecurityContext,
    custom_kind,
)
from appstack.sdk import config as sdk_config

IDENTITY = OperatorIdentity(project="guestbook", domain="webapp.example.com")
FINALIZER = IDENTITY.key("cleanup")


class GuestbookSpec(KubeModel):
    foo: str | None = Field(default=None, max_length=256)
    security_context: SecurityContext | None = None


class GuestbookStatus(KubeModel):
    observed_generation: int | None = None


@custom_kind(group="webapp.example.com", plural="guestbooks")
class Guestbook(CustomObject):
    spec: GuestbookSpec
    status: GuestbookStatus | None = None


class GuestbookReconciler(KindReconciler[GuestbookSpec]):
    """Never instantiated: the guards read the class's declarations."""

    kind = Guestbook.KIND
    owns = (CONFIG_MAP, SECRET, DEPLOYMENT, SERVICE)
    finalizer = FINALIZER

    def invalid_status(self, obj: KubeObject, problem: Problem) -> KubeModel:
        raise NotImplementedError

    async def apply(self, obj: KubeObject, spec: GuestbookSpec) -> Result | None:
        raise NotImplementedError


PROJECT = sdk_config.Project(
    identity=IDENTITY,
    package="guestbook",
    controllers=[Registration("guestbook", GuestbookReconciler)],
    kinds=[Guestbook.KIND],
)

"""What the admission guards are generated from — :class:`GuardedOperator`, one operator's
description: its identity, its kinds (exact apiVersion and kind), the RBAC rules of its
token (what it may write), its finalizers, how its install names cluster-scoped objects,
whether it acts in every namespace, and what it adds of its own (:class:`WriteExtensions`)
— and what every guard of it shares: the policy and its binding, and the match conditions
that select the operator's own requests.

*Who is the operator* is not a user name written into a policy — kustomize's
``namespace:`` and ``namePrefix:``, a Helm release namespace or a renamed ServiceAccount
would move the ServiceAccount and leave the name in the CEL behind, and the guard off. It is
whoever the operator's own RBAC binds: its (Cluster)Role and leader-election Role grant a
*marker* permission nothing else uses (:func:`appstack.sdk.rbac.marker_rule`: verb
``subject-to`` on ``admissionguards.<domain>``), and the policies' ``matchConditions`` ask
the authorizer whether the requester holds it — in the request's namespace, so a namespaced
install (Roles only) is matched too. Holders of everything (``system:masters``,
``cluster-admin``, wildcard roles) hold the marker as well; they are told apart by a
*canary* permission no role grants by name (:data:`appstack.sdk.rbac.CANARY`), which only a
wildcard gives, and are not matched: the guards bound the operator, not the cluster's
administrators. Pure; used by every module of :mod:`appstack.sdk.guards`, by the SDK's
generated install (:mod:`appstack.sdk.config`) and by appstack's
(:mod:`appstack.manifests.admission`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from appstack.sdk.guards.expressions import Validation, labelled
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kind import CustomKind
from appstack.sdk.rbac import CANARY, GUARD_RESOURCE, MARKER, Rule

if TYPE_CHECKING:  # only read: the guards import no runtime
    from appstack.runtime import Resource
    from appstack.sdk.kit.registration import Registration

API_VERSION = "admissionregistration.k8s.io/v1"
#: Whether the operator may act in every namespace: True, False (only labelled ones), or a
#: CEL expression of a boolean (a chart's value, as a template sentinel).
EnableAll = bool | str
Obj = dict[str, Any]


@dataclass(frozen=True)
class WriteExtensions:
    """What an operator adds to the writes policy (:func:`~.writes.writes_policy`) of its
    own, each a CEL piece or a validation:

    * ``owned_elsewhere`` — kinds whose ownership a policy of the operator's own bounds
      (appstack: ``Secret``, by its Secrets policy): the writes policy asks neither that
      they be controlled by its kinds nor anything about a Secret's type;
    * ``readopted`` — when an update may make an object the operator released (still
      labelled as its own, no controller) controlled again (appstack: an EtcdCluster's
      member volume, by that very cluster);
    * ``validations`` — more validations, after the ownership one (appstack: its
      EndpointSlices);
    * ``unowned`` — kinds it writes without owning them: the primaries it patches (a
      finalizer) and the ``writes`` of its controllers of any kind
      (:class:`~appstack.sdk.kit.objects.ObjectReconciler`, e.g. a Secret-copier's
      copies), derived by :meth:`GuardedOperator.of`: only the ownership check is left out
      for them — still only in enabled namespaces, never a service-account-token Secret,
      pods at the baseline, Services without addresses of the cluster;
    * ``own_secret`` — (namespace, name) of the ``kubernetes.io/tls`` Secret the operator
      keeps in its own namespace, owned by nothing (its admission webhooks' shared
      certificate): its creates and updates are not matched by the writes policy (its RBAC
      names that Secret in that namespace alone)."""

    owned_elsewhere: tuple[str, ...] = ()
    readopted: str | None = None
    validations: tuple[Validation, ...] = ()
    unowned: tuple[str, ...] = ()
    own_secret: tuple[str, str] | None = None


@dataclass(frozen=True)
class GuardExtensions:
    """What an operator adds to the admission guards every SDK operator gets, declared once
    where its install is generated from (a scaffolded project: ``GUARDS`` in its
    ``controllers`` module, read by ``make manifests``; appstack:
    :data:`appstack.manifests.admission.GUARDS`):

    * ``writes`` — :class:`WriteExtensions` of its writes policy (kinds a policy of its own
      bounds, a released object it may own again, more validations);
    * ``own`` — policies of its own, each made from the operator as its guards see it
      (``own(operator)`` → a ValidatingAdmissionPolicy: its :meth:`GuardedOperator.policy`,
      named by :meth:`GuardedOperator.operator_name`, matching the operator's requests by
      :meth:`GuardedOperator.only_operator`), bound as the guards are and installed after
      who may enable a namespace, before the writes policy (:func:`~.policies`)."""

    writes: WriteExtensions = field(default_factory=WriteExtensions)
    own: tuple[Callable[[GuardedOperator], Obj], ...] = ()

    def policies(self, operator: GuardedOperator) -> list[Obj]:
        """Its own policies for ``operator``; a ``ValueError`` naming the function for one
        that makes no ValidatingAdmissionPolicy with a name (a guard silently missing)."""
        made = []
        for make in self.own:
            policy = make(operator)
            named = isinstance(policy, dict) and (policy.get("metadata") or {}).get("name")
            if not named or policy.get("kind") != "ValidatingAdmissionPolicy":
                what = getattr(make, "__qualname__", repr(make))
                raise ValueError(
                    f"GuardExtensions.own: {what}() made {type(policy).__name__} "
                    f"{policy!r:.60}, not a named ValidatingAdmissionPolicy "
                    "(make it with operator.policy(name, spec))"
                )
            made.append(policy)
        return made


@dataclass(frozen=True)
class GuardedOperator:
    """One operator as its guards see it (see the module docstring).

    ``suffix`` ends the name of every cluster-scoped object of the install (appstack:
    ``-<install namespace>``, so that two installs never share one; a kustomize project:
    nothing, its ``namePrefix`` does it), ``shown_suffix`` is how messages write it
    (default: ``suffix``); ``labels`` are the policies' (default: the identity's install
    labels)."""

    identity: OperatorIdentity
    kinds: tuple[CustomKind, ...]
    rules: tuple[Rule, ...]
    finalizers: tuple[str, ...] = ()
    suffix: str = ""
    shown_suffix: str | None = None
    enable_all: EnableAll = False
    labels: Mapping[str, str] | None = None
    writes: WriteExtensions = field(default_factory=WriteExtensions)
    #: ``apiVersion/Kind`` of the kinds its controllers of any kind reconcile (an
    #: :class:`~appstack.sdk.kit.objects.ObjectReconciler`'s primary): its Events may be
    #: about them too.
    others: tuple[str, ...] = ()
    #: Installed sharded (docs/sharding.md): its token may change the shard labels of its
    #: kinds' objects (:attr:`~appstack.sdk.identity.OperatorIdentity.shard_labels`), and
    #: nobody else may (:func:`~.kinds.shard_labels_policy`).
    sharded: bool = False
    #: The resources its controllers of any kind reconcile (an ``ObjectReconciler``'s
    #: primary: ConfigMaps, another project's kind): installed sharded, their shard labels
    #: are guarded as its kinds' are (:func:`~.kinds.shard_labels_policy`).
    other_primaries: tuple[Resource, ...] = ()

    @classmethod
    def of(
        cls,
        identity: OperatorIdentity,
        registrations: Iterable[Registration],
        *,
        rules: Iterable[Rule] | None = None,
        kinds: Iterable[CustomKind] = (),
        **options: Any,
    ) -> GuardedOperator:
        """The operator of these controllers: their kinds (and ``kinds``, served without a
        controller) and finalizers, and ``rules`` (default: every controller's own; give
        the whole role's, process rules included)."""
        registered = list(registrations)
        every = [r for each in registered for r in each.rules] if rules is None else rules
        finalizers = {c.reconciler.finalizer for c in registered if c.reconciler.finalizer}
        served: dict[tuple[str, str], CustomKind] = {}
        for kind in [*(c.kind for c in registered if c.custom), *kinds]:
            served.setdefault((kind.api_version, kind.kind), kind)
        unowned: list[str] = []
        for controller in registered:
            if controller.custom:
                continue
            reconciler = controller.reconciler
            patched = (controller.primary,) if reconciler.finalizer else ()
            for resource in (*patched, *getattr(reconciler, "writes", ())):
                if resource.kind not in unowned:
                    unowned.append(resource.kind)
        if unowned:
            writes = options.pop("writes", WriteExtensions())
            options["writes"] = replace(writes, unowned=(*writes.unowned, *unowned))
        others = [f"{c.primary.api_version}/{c.primary.kind}" for c in registered if not c.custom]
        if others:
            options["others"] = tuple(dict.fromkeys(others))
            options["other_primaries"] = tuple(
                dict.fromkeys(c.primary for c in registered if not c.custom)
            )
        return cls(
            identity=identity,
            kinds=tuple(served.values()),
            rules=tuple(every),
            finalizers=tuple(sorted(finalizers)),
            **options,
        )

    # ------------------------------------------------------------------------- names
    @property
    def who(self) -> str:
        """How messages name the operator: ``the <project> operator``."""
        return f"the {self.identity.project} operator"

    def operator_name(self, part: str) -> str:
        """A policy about the operator's own writes: ``<name>-<part><suffix>``."""
        return f"{self.identity.name}-{part}{self.suffix}"

    def project_name(self, part: str, *, shown: bool = False) -> str:
        """A cluster-scoped object of the project (who may enable, a tenant's baseline):
        ``<project>-<part><suffix>`` (as messages show it with ``shown``)."""
        suffix = self.shown_suffix if shown and self.shown_suffix is not None else self.suffix
        return f"{self.identity.project}-{part}{suffix}"

    # ---------------------------------------------------------------------- its kinds
    def owner_versions(self) -> str:
        """CEL list of ``apiVersion/Kind`` of every kind of the operator, exactly as served."""
        return "[" + ", ".join(f"'{k.api_version}/{k.kind}'" for k in self.kinds) + "]"

    def controlled(self, target: str) -> str:
        """CEL: ``target`` has a controller ownerReference to one of the operator's kinds,
        with the exact served apiVersion (another version names nothing: the garbage
        collector would never remove what it "owns")."""
        return (
            f"(has({target}.metadata.ownerReferences) && "
            f"{target}.metadata.ownerReferences.exists(r, "
            "has(r.controller) && r.controller && "
            f"(r.apiVersion + '/' + r.kind) in {self.owner_versions()}))"
        )

    def ours(self, target: str) -> str:
        """CEL: ``target`` carries the operator's managed-by label."""
        ((key, value),) = self.identity.managed_by.items()
        return labelled(key, value, f"{target}.metadata")

    # ------------------------------------------------------------------------- shared
    def enabled_variable(self) -> dict[str, str]:
        """The policy variable ``enabled``: may the operator act in the request's namespace."""
        if isinstance(self.enable_all, bool):
            check = "true" if self.enable_all else labelled(self.identity.enabled_label)
            return {"name": "enabled", "expression": check}
        return {"name": "enabled", "expression": self.enable_all}

    def not_enabled(self, what: str = "") -> Validation:
        """The validation that refuses writes (of ``what``: ``Secrets``, ``Events``) where
        the namespace is not enabled (the ``enabled`` variable)."""
        project = self.identity.project
        written = f"{what} " if what else ""
        return {
            "expression": "variables.enabled",
            "messageExpression": (
                f"'{self.who} may not write {written}in namespace ' + "
                f"request.namespace + ': it is not enabled for {project}'"
            ),
            "reason": "Forbidden",
        }

    def _holds(self, verb: str) -> str:
        return (
            f"authorizer.group('{self.identity.domain}').resource('{GUARD_RESOURCE}')"
            f".namespace(request.namespace).check('{verb}').allowed()"
        )

    def only_operator(self) -> list[dict[str, str]]:
        """Requests by whoever the operator's RBAC binds (the marker), not by holders of
        everything (the canary)."""
        return [
            {
                "name": f"bound-as-the-{self.identity.project}-operator",
                "expression": self._holds(MARKER),
            },
            {"name": "not-an-administrator", "expression": f"!{self._holds(CANARY)}"},
        ]

    def not_operator(self) -> list[dict[str, str]]:
        """Requests by anyone but the operator and the holders of everything: tenants,
        other controllers (the opposite of :meth:`only_operator`, administrators left
        out of both)."""
        return [{"name": "not-the-operator", "expression": f"!{self._holds(MARKER)}"}]

    def policy(self, name: str, spec: Obj) -> Obj:
        """A ValidatingAdmissionPolicy of the install (refusing when it cannot be evaluated)."""
        return {
            "apiVersion": API_VERSION,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name, "labels": dict(self.install_labels)},
            "spec": {"failurePolicy": "Fail", **spec},
        }

    @property
    def install_labels(self) -> Mapping[str, str]:
        """The labels of the policies and bindings."""
        return self.labels if self.labels is not None else self.identity.install_labels

    def binding(self, policy: Obj) -> Obj:
        """Enforce ``policy`` everywhere (Deny: the write is refused, not only audited)."""
        name = policy["metadata"]["name"]
        return {
            "apiVersion": API_VERSION,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": dict(self.install_labels)},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        }

"""The SDK's admission guards (appstack.sdk.guards) for an operator that is not appstack:
the tutorial's guestbook of ``webapp.example.com``, whose controller owns ConfigMaps,
Secrets, Deployments and Services and has a finalizer, generated as a scaffolded
project's install generates them (:func:`appstack.sdk.config.guarded`). The policies are
named after the project and select its token by the marker of its own group; each guard
refuses the attack (evaluated client-side with the CEL engine, tests/support/admission.py)
and admits the operator's real write. appstack's own policies, built on the same
generator: tests/unit/manifests/test_admission.py."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from appstack.runtime import SECRET, Result
from appstack.sdk import ObjectReconciler, Registration
from appstack.sdk import config as sdk_config
from appstack.sdk.guards import GuardedOperator, enabler_role, policies
from appstack.sdk.guards.kinds import baseline_policy, events_policy, kinds_policy
from appstack.sdk.guards.namespaces import namespaces_policy
from appstack.sdk.guards.writes import lease_policy, writes_policy, written_resources
from appstack.sdk.kit.meta import child_labels, child_metadata
from appstack.sdk.rbac import marker_rule
from tests.support.admission import condition, namespace_object, refusals
from tests.support.guestbook import FINALIZER, IDENTITY, PROJECT

OPERATOR = sdk_config.guarded(PROJECT)
WRITES = writes_policy(OPERATOR)
KINDS = kinds_policy(OPERATOR)
assert WRITES is not None
assert KINDS is not None
SHOP = namespace_object("shop", label=IDENTITY.enabled_label)
CLOSED = namespace_object("closed", enabled=False)
OWNER = {
    "apiVersion": "webapp.example.com/v1",
    "kind": "Guestbook",
    "metadata": {"name": "book", "namespace": "shop", "uid": "gb-1", "generation": 2},
    "spec": {"foo": "bar"},
}


def _said(policy: dict[str, Any], *args: Any, **kwargs: Any) -> str:
    kwargs.setdefault("namespace", SHOP)
    return " ".join(refusals(policy, *args, **kwargs))


def _child(kind: str = "ConfigMap", **body: Any) -> dict[str, Any]:
    """A child as the kit writes it: controlled by the Guestbook, labelled as its own."""
    labels = child_labels("book", "guestbook", IDENTITY.managed_by)
    api = {"Deployment": "apps/v1"}.get(kind, "v1")
    metadata = child_metadata(OWNER, f"book-{kind.lower()}", labels)
    return {"apiVersion": api, "kind": kind, "metadata": metadata, **body}


def _deployment(**pod: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "web", "image": "nginx:1.27"}], **pod}
    template = {"metadata": {"labels": {"app": "book"}}, "spec": spec}
    return _child(
        "Deployment", spec={"selector": {"matchLabels": {"app": "book"}}, "template": template}
    )


def _without(obj: dict[str, Any], *fields: str) -> dict[str, Any]:
    found = copy.deepcopy(obj)
    for name in fields:
        found["metadata"].pop(name, None)
    return found


# ----------------------------------------------------------------------- names, marker
def test_the_policies_are_the_projects_and_select_its_token_by_its_own_marker() -> None:
    every = policies(OPERATOR)
    names = [o["metadata"]["name"] for o in every if o["kind"] == "ValidatingAdmissionPolicy"]
    assert names == [
        "guestbook-namespace-labels",
        "guestbook-operator-writes",
        "guestbook-operator-lease-duration",
        "guestbook-operator-kinds",
        "guestbook-operator-events",
        "guestbook-baseline",
    ]
    for policy, binding in zip(every[::2], every[1::2], strict=True):
        assert binding["spec"] == {
            "policyName": policy["metadata"]["name"],
            "validationActions": ["Deny"],
        }
        assert policy["spec"]["failurePolicy"] == "Fail"
    for policy in (WRITES, KINDS, lease_policy(OPERATOR), events_policy(OPERATOR)):
        marker, canary = policy["spec"]["matchConditions"]
        assert marker["name"] == "bound-as-the-guestbook-operator"
        assert (
            "authorizer.group('webapp.example.com').resource('admissionguards')"
            in (marker["expression"])
        )
        assert "'subject-to'" in marker["expression"]
        assert canary["expression"].startswith("!")
        assert "held-only-through-a-wildcard" in canary["expression"]
    assert "appstack" not in json.dumps(every)  # nothing of appstack's in another's guards
    # the marker is granted by the operator's own roles: the manager's and the Lease's
    rbac = sdk_config.rbac_objects(PROJECT)
    for path in ("rbac/role.yaml", "rbac/leader_election_role.yaml"):
        role = rbac[path]
        assert isinstance(role, dict)
        assert marker_rule("webapp.example.com") in role["rules"], path
    enabler = enabler_role(OPERATOR)
    assert enabler["metadata"]["name"] == "guestbook-namespace-enabler"
    assert enabler["rules"] == [
        {"apiGroups": ["webapp.example.com"], "resources": ["namespaces"], "verbs": ["enable"]}
    ]


def test_the_writes_policy_covers_what_the_role_writes_and_nothing_else() -> None:
    assert written_resources(OPERATOR) == [
        ("", "configmaps"),
        ("", "secrets"),
        ("apps", "deployments"),
        ("", "services"),
    ]
    # an operator whose role writes nothing gets no writes policy, one without kinds none
    # about its kinds (a policy with nothing to match is invalid)
    idle = GuardedOperator(IDENTITY, kinds=(), rules=())
    assert writes_policy(idle) is None
    assert kinds_policy(idle) is None
    assert baseline_policy(idle) is None
    assert [o["metadata"]["name"] for o in policies(idle)][::2] == [
        "guestbook-namespace-labels",
        "guestbook-operator-lease-duration",
        "guestbook-operator-events",
    ]


# ------------------------------------------------------------------------------ writes
def test_the_operators_real_writes_are_admitted() -> None:
    secret = _child("Secret", type="kubernetes.io/tls", data={"tls.crt": "", "tls.key": ""})
    service = _child("Service", spec={"selector": {"app": "book"}, "ports": [{"port": 80}]})
    for child in (_child(data={"foo": "bar"}), secret, service, _deployment()):
        name = child["kind"]
        assert _said(WRITES, "CREATE", child) == "", name
        assert _said(WRITES, "UPDATE", child, child) == "", name
        assert _said(WRITES, "DELETE", None, child) == "", name
    # its own finalizer
    held = _child(data={})
    held["metadata"]["finalizers"] = [FINALIZER]
    assert _said(WRITES, "CREATE", held) == ""


@pytest.mark.parametrize(
    ("namespace", "said"),
    [
        (namespace_object("kube-system", label=IDENTITY.enabled_label), "(unless it is labelled"),
        (namespace_object("kube-public", label=IDENTITY.enabled_label), "(unless it is labelled"),
        (CLOSED, "it is not enabled for guestbook"),
        (namespace_object("other", label="appstack.dev/enabled"), "it is not enabled for"),
    ],
)
def test_nothing_is_written_outside_enabled_namespaces_nor_in_kube_system(
    namespace: dict[str, Any], said: str
) -> None:
    """The review's canary: the token rewrote kube-system's aws-auth ConfigMap."""
    canary = _child(
        data={"mapRoles": "- rolearn: arn:aws:iam::1:role/x\n  groups: [system:masters]"}
    )
    canary["metadata"].update(name="aws-auth", namespace=namespace["metadata"]["name"])
    for operation, new, old in (
        ("CREATE", canary, None),
        ("UPDATE", canary, canary),
        ("DELETE", None, canary),
    ):
        assert said in _said(WRITES, operation, new, old, namespace=namespace), operation


def test_a_system_namespace_labelled_for_it_is_written() -> None:
    opened = namespace_object(
        "kube-system", label=IDENTITY.enabled_label, **{IDENTITY.may_write_label: "true"}
    )
    assert _said(WRITES, "CREATE", _child(data={}), namespace=opened) == ""


def test_only_what_its_kinds_control_and_label_is_written() -> None:
    mine = _child(data={"foo": "bar"})
    unowned = _without(mine, "ownerReferences")
    unlabelled = _without(mine, "labels")
    foreign = copy.deepcopy(mine)
    foreign["metadata"]["ownerReferences"][0].update(apiVersion="apps/v1", kind="Deployment")
    other_version = copy.deepcopy(mine)
    other_version["metadata"]["ownerReferences"][0]["apiVersion"] = "webapp.example.com/v2"
    not_controller = copy.deepcopy(mine)
    not_controller["metadata"]["ownerReferences"][0]["controller"] = False
    owned = "may only write objects controlled by one of its kinds"
    for attack in (unowned, unlabelled, foreign, other_version, not_controller):
        assert owned in _said(WRITES, "CREATE", attack)
    # an administrator's ConfigMap: neither taken over (a forged owner) nor deleted
    theirs = _without(_without(mine, "ownerReferences"), "labels")
    assert owned in _said(WRITES, "UPDATE", mine, theirs)
    assert owned in _said(WRITES, "DELETE", None, theirs)
    # released (its owner dropped) is fine: giving up grants nothing
    assert _said(WRITES, "UPDATE", unowned, mine) == ""


def test_no_service_account_token_secret() -> None:
    token = _child("Secret", type="kubernetes.io/service-account-token")
    token["metadata"]["annotations"] = {"kubernetes.io/service-account.name": "default"}
    assert "never writes a Secret of type kubernetes.io/service-account-token" in _said(
        WRITES, "CREATE", token
    )
    assert _said(WRITES, "CREATE", {**token, "type": "Opaque"}) == ""


@pytest.mark.parametrize(
    ("pod", "said"),
    [
        (
            {"containers": [{"name": "x", "image": "x", "securityContext": {"privileged": True}}]},
            "privileged containers",
        ),
        ({"hostNetwork": True}, "the host's network"),
        ({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, "hostPath"),
        (
            {"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
            "beyond the Pod Security baseline",
        ),
        ({"nodeName": "node-1"}, "may not name a pod's node"),
    ],
)
def test_pod_templates_stay_at_the_baseline(pod: dict[str, Any], said: str) -> None:
    attack = _deployment(**pod)
    assert said in _said(WRITES, "CREATE", attack)
    privileged = namespace_object(
        "shop", label=IDENTITY.enabled_label, **{IDENTITY.allow_privileged_label: "true"}
    )
    lifted = refusals(WRITES, "CREATE", attack, namespace=privileged)
    # the opt-in lifts the baseline; a node named stays refused
    assert (lifted == []) is ("nodeName" not in pod), lifted


def test_services_take_no_address_of_the_cluster_and_nothing_is_held_or_frozen() -> None:
    service = _child("Service", spec={"selector": {"app": "book"}, "ports": [{"port": 80}]})
    for field, value in (("externalIPs", ["10.96.0.10"]), ("loadBalancerIP", "203.0.113.7")):
        attack = copy.deepcopy(service)
        attack["spec"][field] = value
        assert f"never sets spec.{field} on a Service" in _said(WRITES, "CREATE", attack)
    config = _child(data={})
    held = copy.deepcopy(config)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    assert f"may add no finalizer to what it writes but its own ({FINALIZER})" in _said(
        WRITES, "CREATE", held
    )
    assert "never makes a ConfigMap or Secret immutable" in _said(
        WRITES, "UPDATE", {**config, "immutable": True}, config
    )


def test_every_namespace_when_the_project_enables_them_all() -> None:
    everywhere = sdk_config.guarded(
        sdk_config.Project(
            identity=IDENTITY,
            package="guestbook",
            controllers=PROJECT.controllers,
            kinds=PROJECT.kinds,
            enable_all_namespaces=True,
        )
    )
    policy = writes_policy(everywhere)
    assert policy is not None
    assert refusals(policy, "CREATE", _child(data={}), namespace=CLOSED) == []
    # kube-system still takes its own label
    system = namespace_object("kube-system", enabled=False)
    assert "(unless it is labelled" in " ".join(
        refusals(policy, "CREATE", _child(), namespace=system)
    )


# --------------------------------------------------------------------- its kinds, Events
def test_its_kinds_get_only_finalizers_and_status() -> None:
    changed = {**OWNER, "spec": {"foo": "image: evil"}}
    assert "never their spec" in _said(KINDS, "UPDATE", changed, OWNER)
    forged = copy.deepcopy(OWNER)
    forged["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "x", "controller": True}
    ]
    assert "never changes the ownerReferences" in _said(KINDS, "UPDATE", forged, OWNER)
    held = copy.deepcopy(OWNER)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    assert "may add no finalizer to its kinds' objects" in _said(KINDS, "UPDATE", held, OWNER)
    ours = copy.deepcopy(OWNER)
    ours["metadata"]["finalizers"] = [FINALIZER]
    assert _said(KINDS, "UPDATE", ours, OWNER) == ""
    status = {**OWNER, "status": {"observedGeneration": 2}}
    assert _said(KINDS, "UPDATE", status, OWNER, sub_resource="status") == ""


def test_where_not_enabled_its_status_says_so_and_nothing_else() -> None:
    honest = {
        **OWNER,
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "NamespaceNotEnabled",
                    "message": IDENTITY.not_enabled_message("closed"),
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        },
    }
    assert refusals(KINDS, "UPDATE", honest, OWNER, namespace=CLOSED, sub_resource="status") == []
    spoofed = copy.deepcopy(honest)
    spoofed["status"]["conditions"][0].update(status="True", reason="Ready")
    said = " ".join(
        refusals(KINDS, "UPDATE", spoofed, OWNER, namespace=CLOSED, sub_resource="status")
    )
    assert "in a namespace not enabled for guestbook the operator may only write a status" in said


def test_events_only_about_its_kinds_in_their_enabled_namespace() -> None:
    events = events_policy(OPERATOR)

    def event(regarding: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "e", "namespace": "shop"},
            "reason": "Created",
            "regarding": regarding,
        }

    about = {"apiVersion": "webapp.example.com/v1", "kind": "Guestbook", "name": "book"}
    assert _said(events, "CREATE", event({**about, "namespace": "shop"})) == ""
    pod = {"apiVersion": "v1", "kind": "Pod", "name": "kube-apiserver", "namespace": "shop"}
    assert "only write Events about objects of its kinds" in _said(events, "CREATE", event(pod))
    elsewhere = {**about, "namespace": "kube-system"}
    assert "only write Events about objects of its kinds" in _said(
        events, "CREATE", event(elsewhere)
    )
    closed = refusals(events, "CREATE", event({**about, "namespace": "closed"}), namespace=CLOSED)
    assert "may not write Events in namespace closed" in " ".join(closed)


def test_a_tenants_guestbook_asks_for_no_privilege() -> None:
    baseline = baseline_policy(OPERATOR)
    assert baseline is not None
    asking = {**OWNER, "spec": {"securityContext": {"privileged": True}}}
    said = _said(baseline, "CREATE", asking)
    assert "Guestbook spec.securityContext: privileged" in said
    assert IDENTITY.allow_privileged_label in said
    fine = {**OWNER, "spec": {"securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]}}}}
    assert _said(baseline, "CREATE", fine) == ""


# ---------------------------------------------------------------- namespaces, the Lease
def test_only_its_opt_in_labels_are_guarded() -> None:
    policy = namespaces_policy(OPERATOR)
    (changes,) = policy["spec"]["matchConditions"]
    before = {"metadata": {"name": "team", "labels": {"team": "a"}}}
    for label in IDENTITY.opt_in_labels:
        after = {"metadata": {"name": "team", "labels": {label: "true"}}}
        assert condition(changes["expression"], "UPDATE", after, before) is True
    # another operator's label is not this policy's business
    other = {"metadata": {"name": "team", "labels": {"team": "a", "appstack.dev/enabled": "true"}}}
    assert condition(changes["expression"], "UPDATE", other, before) is False
    (validation,) = policy["spec"]["validations"]
    assert "ClusterRole guestbook-namespace-enabler)" in validation["message"]
    assert "resource('namespaces').check('enable')" in validation["expression"]


@pytest.mark.parametrize(
    ("duration", "admitted"), [(15, True), (1, True), (300, True), (301, False)]
)
def test_its_lease_is_held_at_most_five_minutes(duration: int, admitted: bool) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": IDENTITY.lease_name, "namespace": IDENTITY.namespace},
        "spec": {"holderIdentity": "x", "leaseDurationSeconds": duration},
    }
    said = refusals(lease_policy(OPERATOR), "UPDATE", lease, lease)
    assert (said == []) is admitted, said


# ------------------------------------------------------------ a controller of any kind
class _Copier(ObjectReconciler):
    """docs/any-kind.md's shape: Secrets as the primary, copies written unowned."""

    primary = SECRET
    writes = (SECRET,)
    finalizer = "webapp.example.com/copies"

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        return None


def test_a_controller_of_any_kind_writes_its_kinds_unowned_and_nothing_more() -> None:
    copier = Registration(name="copier", reconciler=_Copier)
    operator = GuardedOperator.of(
        IDENTITY, [*PROJECT.controllers, copier], rules=[*OPERATOR.rules, *copier.rules]
    )
    assert operator.writes.unowned == ("Secret",)
    writes = writes_policy(operator)
    assert writes is not None
    copy = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "shop", "labels": {"copy-of": "src"}},
        "data": {"password": "czNjcmV0"},
    }
    assert _said(writes, "CREATE", copy) == ""  # no owner, no managed-by label: its job
    assert _said(writes, "DELETE", None, copy) == ""
    closed = " ".join(refusals(writes, "CREATE", copy, namespace=CLOSED))
    assert "enabled" in closed  # still only where a platform team enabled it
    token = {**copy, "type": "kubernetes.io/service-account-token"}
    assert "service-account-token" in _said(writes, "CREATE", token)
    stray = _without(_child(data={"x": "y"}), "ownerReferences")  # a ConfigMap: owned only
    assert "may only write objects controlled by one of its kinds" in _said(writes, "CREATE", stray)
    # its Events may be about the Secrets it reconciles too, and still nothing else
    events = events_policy(operator)
    secret = {"apiVersion": "v1", "kind": "Secret", "name": "db", "namespace": "shop"}
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "shop"},
        "reason": "CopyConflict",
    }
    assert _said(events, "CREATE", {**event, "regarding": secret}) == ""
    pod = {**secret, "kind": "Pod"}
    assert "only write Events about objects of its kinds" in _said(
        events, "CREATE", {**event, "regarding": pod}
    )
    assert "Secret" not in json.dumps(events_policy(OPERATOR))  # the others' unchanged

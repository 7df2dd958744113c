"""The install's admission policies evaluated client-side (tests/support/admission.py: the
project's CEL engine, ``request``/``object``/``oldObject`` as the API server binds them),
issue #46: every write the operator really makes is admitted — the children its
controllers render, its Secrets (generated; given to a stack and taken back when
``retainOnDelete`` flips; a MongoDB user's rewritten with a new password), the status it
writes where a namespace is not enabled, its finalizer, its Lease — and each attack of the
review is refused with its message. That the API server agrees, attack by attack:
tests/e2e/test_security_writes.py, test_security.py, test_namespace_enablement.py."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
import yaml

from appstack.api.appstack import AppStack
from appstack.api.mongodbcommunity import MongoDBCommunity, User
from appstack.api.namespaces import GUARDED, not_enabled_message
from appstack.cli.render import render_documents
from appstack.controllers.appstack import middleware
from appstack.controllers.mongodbcommunity import desired as mdbc_desired
from appstack.controllers.mongodbcommunity import scram, users
from appstack.controllers.registry import ALL
from appstack.manifests import admission
from appstack.manifests.admission_secrets import secrets_policy
from appstack.sdk.guards import kinds as guarded_kinds
from appstack.sdk.guards import namespaces as guarded_namespaces
from appstack.sdk.guards import writes as guarded_writes
from appstack.sdk.kit.compare import owners_to_write, status_patch
from appstack.sdk.options import MAX_LEASE_DURATION
from tests.support.admission import condition, namespace_object, refusals
from tests.support.paths import REPO_ROOT

OPERATOR = admission.guarded()
SECRETS = secrets_policy(OPERATOR)
WRITES = guarded_writes.writes_policy(OPERATOR)
KINDS = guarded_kinds.kinds_policy(OPERATOR)
LEASES = guarded_writes.lease_policy(OPERATOR)
assert WRITES is not None
assert KINDS is not None
CLOSED = namespace_object("closed", enabled=False)

DATA = "never changes a Secret's data"
LABELS = "never changes a Secret's app.kubernetes.io/component or appstack.dev/* labels"
OWNERS = "never changes a Secret's ownerReferences"
EXTERNAL_IPS = "never sets spec.externalIPs on a Service"
LOAD_BALANCER_IP = "never sets spec.loadBalancerIP on a Service"
SERVICE_FIELDS = "writes Services of types ClusterIP, NodePort, LoadBalancer, ExternalName"
CHILD_FINALIZER = "may add no finalizer to what it writes but its own"
IMMUTABLE = "never makes a ConfigMap or Secret immutable"
KIND_OWNERS = "never changes the ownerReferences of its kinds' objects"
KIND_FINALIZER = "may add no finalizer to its kinds' objects but its own"
ONLY_REMOVE = "may only remove its finalizer in a namespace not enabled"
NOT_ENABLED_STATUS = "may only write a status that says so"
LEASE = "writes a Lease only with spec.leaseDurationSeconds from 1 to 300"


def _stack(name: str = "shop", uid: str = "stack-1") -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": name, "namespace": "shop", "uid": uid},
    }


def _middleware(kind: str = "mongodb", *, retain: bool = True) -> Any:
    spec = {
        "middleware": [
            {"name": "db", "type": kind, "managed": {"storage": {"retainOnDelete": retain}}}
        ],
        "components": [{"name": "api", "image": "api:1", "uses": ["db"]}],
    }
    return AppStack.model_validate({"metadata": {"name": "shop"}, "spec": spec}).spec.middleware[0]  # type: ignore[index]


def _stored(secret: Any) -> dict[str, Any]:
    """A Secret as admission sees it: ``stringData`` already folded into ``data``."""
    found = copy.deepcopy(dict(secret))
    strings = found.pop("stringData", {})
    found["data"] = {
        **found.get("data", {}),
        **{k: base64.b64encode(v.encode()).decode() for k, v in strings.items()},
    }
    return found


def _with(obj: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """``obj`` with these metadata fields (None: removed)."""
    found = copy.deepcopy(obj)
    for key, value in metadata.items():
        if value is None:
            found["metadata"].pop(key, None)
        else:
            found["metadata"][key] = value
    return found


def _ref(kind: str, name: str, uid: str, *, controller: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": controller,
        "blockOwnerDeletion": True,
    }


_, _SAMPLE = yaml.safe_load_all((REPO_ROOT / "examples/mongodbcommunity.yaml").read_text())
MONGO = {
    **_SAMPLE,
    "metadata": {"name": "example-mongodb", "namespace": "shop", "uid": "mdbc-1"},
    "spec": MongoDBCommunity.model_validate(_SAMPLE).spec.to_dict(),
}
USER = User.model_validate(_SAMPLE["spec"]["users"][0])


# ------------------------------------------------------------------------------ Secrets
def test_every_secret_the_operator_creates_is_admitted() -> None:
    generated = [
        *middleware.generated_secrets(_stack(), _middleware(retain=True)),
        *middleware.generated_secrets(_stack(), _middleware(retain=False)),
        *middleware.generated_secrets(_stack(), _middleware("postgres")),
        *mdbc_desired.generated_secrets(MONGO),
        users.connection_secret(MONGO, 3, USER, "pw"),
        *scram.secret(MONGO, USER, "pw"),
    ]
    for secret in generated:
        assert refusals(SECRETS, "CREATE", _stored(secret)) == [], secret["metadata"]["name"]
        assert refusals(WRITES, "CREATE", _stored(secret)) == [], secret["metadata"]["name"]
        assert refusals(SECRETS, "DELETE", None, _stored(secret)) == []


def _owned_as(
    current: dict[str, Any], want: dict[str, Any], owner: dict[str, Any]
) -> dict[str, Any]:
    """``current`` after :meth:`ChildWriter.ensure_once`'s patch: owned as ``want`` says."""
    owners = owners_to_write(current, want["metadata"], owner["metadata"]["uid"])
    assert owners is not None
    return _with(current, ownerReferences=owners or None)


def test_a_secret_kept_for_a_stack_member_moves_to_that_stack_and_back_only() -> None:
    kept = _stored(middleware.credentials(_stack(), _middleware(retain=True)))
    owned = _stored(middleware.credentials(_stack(), _middleware(retain=False)))
    given = _owned_as(kept, owned, _stack())  # retainOnDelete flipped to false
    taken = _owned_as(owned, kept, _stack())  # ... and back to true
    adopted = _owned_as(kept, owned, _stack(uid="stack-2"))  # a re-created stack of that name
    for old, new in ((kept, given), (owned, taken), (kept, adopted)):
        assert refusals(SECRETS, "UPDATE", new, old) == []
    assert given["metadata"]["ownerReferences"][0]["name"] == "shop"
    assert "ownerReferences" not in taken["metadata"]
    for forged in (
        _ref("AppService", "shop", "x"),  # not the stack it was kept for
        _ref("AppStack", "other", "x"),
        _ref("MongoDBCommunity", "shop", "x"),
    ):
        assert OWNERS in " ".join(
            refusals(SECRETS, "UPDATE", _with(kept, ownerReferences=[forged]), kept)
        )
    # no other owner beside it either (a made-up one has the collector delete the Secret)
    extra = [*given["metadata"]["ownerReferences"], _ref("AppService", "a", "x", controller=False)]
    assert OWNERS in " ".join(
        refusals(SECRETS, "UPDATE", _with(given, ownerReferences=extra), kept)
    )
    # a Secret not kept for a stack member never changes owner
    connection = _stored(users.connection_secret(MONGO, 3, USER, "pw"))
    released = _with(connection, ownerReferences=None)
    assert OWNERS in " ".join(refusals(SECRETS, "UPDATE", released, connection))


def test_a_mongodb_users_secret_follows_the_password_under_the_same_controller_only() -> None:
    for make in (
        lambda password, members: users.connection_secret(MONGO, members, USER, password),
        lambda password, members: scram.secret(MONGO, USER, password)[0],
    ):
        old = _stored(make("before", 3))
        for new in (_stored(make("after", 3)), _stored(make("before", 5))):
            assert refusals(SECRETS, "UPDATE", new, old) == []  # the operator's apply
        # new data under another controller (its uid, then its name): refused
        other = _ref("MongoDBCommunity", "example-mongodb", "mdbc-2")
        moved = _with(_stored(make("after", 3)), ownerReferences=[other])
        assert _short(refusals(SECRETS, "UPDATE", moved, old)) == [DATA, OWNERS]
        renamed = _with(moved, ownerReferences=[{**other, "uid": "mdbc-1", "name": "x"}])
        assert _short(refusals(SECRETS, "UPDATE", renamed, old)) == [DATA, OWNERS]


def _short(messages: list[str]) -> list[str]:
    """Each message cut to the fragment the tests name."""
    fragments = (DATA, LABELS, OWNERS)
    return [next((f for f in fragments if f in m), m) for m in messages]


def test_a_generated_password_cannot_be_rewritten_by_relabelling_it_first() -> None:
    """The review's attack: one PATCH makes a stack's generated credentials a MongoDB
    user's Secret (component, a made-up MongoDBCommunity as controller) with new data; a
    second would have restored the metadata. The first is refused for each of the three,
    and a data change of the restored shape too."""
    for credentials in (
        _stored(middleware.credentials(_stack(), _middleware(retain=True))),
        _stored(middleware.credentials(_stack(), _middleware(retain=False))),
    ):
        relabelled = copy.deepcopy(credentials)
        relabelled["metadata"]["labels"]["app.kubernetes.io/component"] = users.COMPONENT
        relabelled["metadata"]["ownerReferences"] = [_ref("MongoDBCommunity", "made-up", "x")]
        relabelled["data"]["password"] = base64.b64encode(b"stolen").decode()
        assert _short(refusals(SECRETS, "UPDATE", relabelled, credentials)) == [
            DATA,
            LABELS,
            OWNERS,
        ]
        rewritten = copy.deepcopy(credentials)
        rewritten["data"]["password"] = base64.b64encode(b"stolen").decode()
        assert _short(refusals(SECRETS, "UPDATE", rewritten, credentials)) == [DATA]
    # the component of a MongoDB user's Secret stays too (connection → scram, new data)
    connection = _stored(users.connection_secret(MONGO, 3, USER, "pw"))
    scrammed = copy.deepcopy(connection)
    scrammed["metadata"]["labels"]["app.kubernetes.io/component"] = scram.COMPONENT
    scrammed["data"]["password"] = base64.b64encode(b"stolen").decode()
    assert _short(refusals(SECRETS, "UPDATE", scrammed, connection)) == [DATA, LABELS]


@pytest.mark.parametrize(
    ("change", "refused"),
    [
        ({"appstack.dev/member": None}, True),
        ({"appstack.dev/stack": "other"}, True),
        ({"appstack.dev/retain": "no"}, True),
        ({"app.kubernetes.io/component": "connection"}, True),
        ({"app.kubernetes.io/name": "renamed"}, False),  # not ours to pin
    ],
)
def test_the_component_and_appstack_labels_of_a_secret_stay(
    change: dict[str, str | None], refused: bool
) -> None:
    kept = _stored(middleware.credentials(_stack(), _middleware(retain=True)))
    labels = {**kept["metadata"]["labels"], **change}
    changed = _with(kept, labels={k: v for k, v in labels.items() if v is not None})
    said = refusals(SECRETS, "UPDATE", changed, kept)
    assert (LABELS in " ".join(said)) is refused, said


# ----------------------------------------------------------------------------- children
def _served(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as admission sees it after the API server's defaults (a Service's)."""
    found = copy.deepcopy(obj)
    if found["kind"] != "Service":
        return found
    spec = found["spec"]
    kind = spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if kind != "ExternalName":
        spec.setdefault("clusterIP", "10.96.0.20")
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.update(ipFamilies=["IPv4"], ipFamilyPolicy="SingleStack")
        spec["internalTrafficPolicy"] = "Cluster"
    if kind in ("NodePort", "LoadBalancer"):
        spec["externalTrafficPolicy"] = "Cluster"
    if kind == "LoadBalancer":
        spec["allocateLoadBalancerNodePorts"] = True
    return found


EXTRA = """
apiVersion: appstack.dev/v1
kind: AppService
metadata: {name: edge}
spec: {image: nginx:1.27, serviceType: LoadBalancer, ports: [{port: 80}]}
---
apiVersion: appstack.dev/v1
kind: AppStack
metadata: {name: outside}
spec:
  middleware:
    - {name: named, type: postgres, external: {host: db.example.com, port: 5432}}
    - {name: addressed, type: postgres, external: {host: 192.0.2.10, port: 5432}}
  components: [{name: app, image: app:1, uses: [named, addressed]}]
"""


def _children() -> list[dict[str, Any]]:
    documents = [
        doc
        for path in sorted((REPO_ROOT / "examples").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
    ]
    rendered = render_documents([*documents, *yaml.safe_load_all(EXTRA)])
    return [_served(o) for o in rendered if o["metadata"].get("ownerReferences")]


def test_every_child_the_controllers_render_is_admitted() -> None:
    children = _children()
    kinds = {o["kind"] for o in children}
    assert {
        "Service",
        "Deployment",
        "StatefulSet",
        "ConfigMap",
        "CronJob",
        "EndpointSlice",
    } <= kinds
    types = {o["spec"]["type"] for o in children if o["kind"] == "Service"}
    assert types == set(guarded_writes.SERVICE_TYPES)
    for child in children:
        name = f"{child['kind']} {child['metadata']['name']}"
        assert refusals(WRITES, "CREATE", child) == [], name
        assert refusals(WRITES, "UPDATE", child, child) == [], name
        assert refusals(WRITES, "DELETE", None, child) == [], name


def _service() -> dict[str, Any]:
    return next(
        o for o in _children() if o["kind"] == "Service" and o["spec"]["type"] == "NodePort"
    )


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("externalIPs", ["10.96.0.10"], EXTERNAL_IPS),  # the cluster's DNS (CVE-2020-8554)
        ("externalIPs", ["203.0.113.7"], EXTERNAL_IPS),
        ("loadBalancerIP", "203.0.113.7", LOAD_BALANCER_IP),
        ("sessionAffinityConfig", {"clientIP": {"timeoutSeconds": 60}}, SERVICE_FIELDS),
        ("loadBalancerSourceRanges", ["0.0.0.0/0"], SERVICE_FIELDS),
        ("healthCheckNodePort", 30999, SERVICE_FIELDS),
    ],
)
def test_a_service_has_only_what_the_operator_writes(field: str, value: Any, said: str) -> None:
    service = _service()
    attack = copy.deepcopy(service)
    attack["spec"][field] = value
    assert said in " ".join(refusals(WRITES, "CREATE", attack))
    assert said in " ".join(refusals(WRITES, "UPDATE", attack, service))
    # set by someone else (an administrator) before: the operator's apply keeps it
    assert refusals(WRITES, "UPDATE", attack, attack) == []
    assert refusals(WRITES, "DELETE", None, attack) == []


def test_no_finalizer_but_the_operators_and_nothing_made_immutable() -> None:
    config = next(o for o in _children() if o["kind"] == "ConfigMap")
    held = _with(config, finalizers=["example.com/hold"])
    assert CHILD_FINALIZER in " ".join(refusals(WRITES, "CREATE", held))
    assert CHILD_FINALIZER in " ".join(refusals(WRITES, "UPDATE", held, config))
    assert refusals(WRITES, "UPDATE", held, held) == []  # someone else's, kept
    assert refusals(WRITES, "UPDATE", config, held) == []  # removed
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {**config["metadata"], "finalizers": ["kubernetes.io/pvc-protection"]},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    assert refusals(WRITES, "CREATE", claim) == []  # the API server's own, on create
    secret = _stored(middleware.credentials(_stack(), _middleware(retain=False)))
    for obj in (config, secret):
        frozen = {**obj, "immutable": True}
        assert IMMUTABLE in " ".join(refusals(WRITES, "CREATE", frozen))
        assert IMMUTABLE in " ".join(refusals(WRITES, "UPDATE", frozen, obj))
        assert refusals(WRITES, "UPDATE", frozen, frozen) == []  # made so by someone else


# ---------------------------------------------------------------------------- our kinds
def _tenants(**metadata: Any) -> dict[str, Any]:
    stack = {
        **_stack(),
        "spec": {"components": [{"name": "web", "image": "nginx:1.7.9"}]},
        "status": {"conditions": []},
    }
    return _with(stack, **metadata)


def test_our_kinds_keep_their_owners_and_get_only_the_operators_finalizer() -> None:
    stack = _tenants()
    (teardown,) = OPERATOR.finalizers
    assert teardown == "appstack.dev/teardown"
    # a made-up owner: the garbage collector would delete the tenant's AppStack
    forged = _with(
        stack,
        ownerReferences=[
            {**_ref("AppService", "ghost", "x"), "apiVersion": "v1", "kind": "ConfigMap"}
        ],
    )
    assert KIND_OWNERS in " ".join(refusals(KINDS, "UPDATE", forged, stack))
    hold = _with(stack, finalizers=["example.com/hold"])
    assert KIND_FINALIZER in " ".join(refusals(KINDS, "UPDATE", hold, stack))
    ours = _with(stack, finalizers=[teardown])
    assert refusals(KINDS, "UPDATE", ours, stack) == []  # finalizer.add
    assert refusals(KINDS, "UPDATE", stack, ours) == []  # finalizer.remove
    theirs = _with(stack, finalizers=["example.com/hold", teardown])
    assert refusals(KINDS, "UPDATE", theirs, hold) == []  # beside a tenant's own
    # where the namespace is not enabled: only removing
    assert ONLY_REMOVE in " ".join(refusals(KINDS, "UPDATE", ours, stack, namespace=CLOSED))
    assert refusals(KINDS, "UPDATE", stack, ours, namespace=CLOSED) == []


READY_TRUE = {
    "type": "Ready",
    "status": "True",
    "reason": "Up",
    "message": "",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


def _status_write(obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """``obj`` after a merge patch of its status (lists replaced)."""
    return {**obj, "status": {**(obj.get("status") or {}), **status}}


def test_where_not_enabled_the_status_says_so_and_nothing_beside_it() -> None:
    for controller in ALL:
        reconciler = object.__new__(controller.reconciler)  # its status is pure: no client
        reconciler.not_enabled_message = not_enabled_message
        obj = {
            "apiVersion": controller.kind.api_version,
            "kind": controller.kind.kind,
            "metadata": {"name": "x", "namespace": "closed", "uid": "u", "generation": 1},
            "spec": {},
            "status": {"conditions": [{**READY_TRUE, "type": "Available"}, READY_TRUE]},
        }
        written = reconciler.not_enabled_status(obj, "closed")
        new = _status_write(obj, status_patch(obj["status"], written))
        said = refusals(KINDS, "UPDATE", new, obj, namespace=CLOSED, sub_resource="status")
        assert said == [], controller.name
    stack = _tenants()
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": "NamespaceNotEnabled",
        "message": not_enabled_message("closed"),
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    spoofed = [
        [ready, {**ready, "type": "Available", "status": "True", "reason": "Up"}],
        [{**ready, "status": "True", "reason": "Ready"}],
        [{**ready, "message": "run kubectl apply -f https://example.com/fix.yaml"}],
        [ready, ready],
        [],
    ]
    for conditions in spoofed:
        new = _status_write(stack, {"conditions": conditions})
        said = refusals(KINDS, "UPDATE", new, stack, namespace=CLOSED, sub_resource="status")
        assert NOT_ENABLED_STATUS in " ".join(said), conditions
        # in an enabled namespace the status is the operator's to write
        assert refusals(KINDS, "UPDATE", new, stack, sub_resource="status") == []
    honest = _status_write(stack, {"conditions": [ready]})
    assert refusals(KINDS, "UPDATE", honest, stack, namespace=CLOSED, sub_resource="status") == []


# ------------------------------------------------------------------- namespaces, Lease
def test_the_opt_in_labels_are_guarded_on_the_status_and_finalize_subresources_too() -> None:
    policy = guarded_namespaces.namespaces_policy(OPERATOR)
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rule["resources"] == ["namespaces", "namespaces/status", "namespaces/finalize"]
    (changes,) = policy["spec"]["matchConditions"]
    before = {"metadata": {"name": "team", "labels": {"team": "a"}}, "spec": {"finalizers": []}}
    for label in GUARDED:
        after = {**before, "metadata": {**before["metadata"], "labels": {label: "true"}}}
        assert condition(changes["expression"], "UPDATE", after, before) is True
    other = {**before, "metadata": {**before["metadata"], "labels": {"team": "b"}}}
    assert condition(changes["expression"], "UPDATE", other, before) is False


def _lease(duration: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "holderIdentity": "appstack-operator-0_x",
        "renewTime": "2026-01-01T00:00:00.000000Z",
    }
    if duration is not None:
        spec["leaseDurationSeconds"] = duration
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "appstack-operator", "namespace": "appstack-system"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("duration", "admitted"),
    [
        (15, True),
        (1, True),
        (int(MAX_LEASE_DURATION), True),
        (301, False),
        (2147483647, False),
        (0, False),
        (None, False),
    ],
)
def test_the_lease_is_held_at_most_as_long_as_the_flags_allow(
    duration: int | None, admitted: bool
) -> None:
    """15 s, the default; 1 s, what a leader writes when it lets go; 300 s, the flag's
    maximum — and never 2147483647 (the token holding the Lease for ever)."""
    lease = _lease(duration)
    for operation, old in (("CREATE", None), ("UPDATE", _lease(15))):
        said = refusals(
            LEASES, operation, lease, old, namespace=namespace_object("appstack-system")
        )
        assert (said == []) is admitted, said
        if not admitted:
            assert len(said) == 1
            assert LEASE in said[0]


def test_the_policies_are_installed_in_order_each_with_its_binding() -> None:
    every = admission.policies()
    names = [o["metadata"]["name"] for o in every if o["kind"] == "ValidatingAdmissionPolicy"]
    assert names == [
        "appstack-namespace-labels-appstack-system",
        "appstack-operator-secrets-appstack-system",
        "appstack-operator-writes-appstack-system",
        "appstack-operator-lease-duration-appstack-system",
        "appstack-operator-kinds-appstack-system",
        "appstack-operator-events-appstack-system",
        "appstack-baseline-appstack-system",
    ]
    for policy, binding in zip(every[::2], every[1::2], strict=True):
        assert binding["spec"]["policyName"] == policy["metadata"]["name"]

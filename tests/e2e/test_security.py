"""What the operator's own token can and cannot do (issue #11, docs/security.md): no
service-account-token Secrets (the ValidatingAdmissionPolicy), no generated password
rewritten — not even by relabelling the Secret a MongoDB user's first (issue #46) — Leases
only its own, by name, in its namespace, held at most five minutes — while the operator
keeps working under exactly these grants."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.api.identity import IDENTITY
from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.appstack import APP_STACK
from appstack.controllers.mongodbcommunity import MONGODB_COMMUNITY
from appstack.controllers.rbac import LEASE_NAME
from appstack.manifests import rbac
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import (
    CONFIG_MAP,
    ENDPOINT_SLICE,
    LEASE,
    NAMESPACE,
    POD,
    SECRET,
    SERVICE,
)
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator, events_until, until
from tests.support.paths import REPO_ROOT as ROOT


@pytest.fixture
async def as_operator(operator_kubeconfig: Path) -> AsyncIterator[Client]:
    """A client holding the operator ServiceAccount's token, writing as its field manager."""
    connecting = Client.connect(str(operator_kubeconfig), field_manager=IDENTITY.field_manager)
    async with await connecting as operator_client:
        yield operator_client


def _secret(namespace: str, type_: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"generateName": "probe-", "namespace": namespace}
    if type_ == "kubernetes.io/service-account-token":
        meta["annotations"] = {"kubernetes.io/service-account.name": "default"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Secret", "type": type_, "metadata": meta}


MANAGED = {"app.kubernetes.io/managed-by": "appstack"}
# credentials kept for a stack member (ownerless): what a retained volume's Secret carries
KEPT = {**MANAGED, "appstack.dev/stack": "shop", "appstack.dev/member": "db"}


async def test_the_operator_token_cannot_mint_a_service_account_token(
    as_operator: Client, namespace: str
) -> None:
    for where in ("kube-system", namespace):
        with pytest.raises(errors.ApiError) as refused:
            await as_operator.create(
                SECRET, _secret(where, "kubernetes.io/service-account-token", MANAGED)
            )
        assert isinstance(refused.value, errors.Forbidden), refused.value
        # kube-system: not enabled for appstack (both policies say so); which one the API
        # server names first is not fixed
        said = refused.value.message
        assert "of type Opaque" in said or (
            where == "kube-system" and "may not write" in said and "kube-system" in said
        ), said
    with pytest.raises(errors.ApiError) as unlabelled:
        await as_operator.create(SECRET, _secret(namespace, "Opaque"))
    assert "may only write Secrets labelled app.kubernetes.io/managed-by=appstack" in (
        unlabelled.value.message
    )
    # Labelled but neither controlled by one of our kinds nor kept for a stack member:
    # refused too (issue #34: nothing of a tenant's is the operator's by a label alone).
    with pytest.raises(errors.Forbidden) as loose:
        await as_operator.create(SECRET, _secret(namespace, "Opaque", MANAGED))
    assert "controlled by one of its kinds" in loose.value.message, loose.value.message
    # What reconciling needs still works: credentials kept for a stack member.
    created = await as_operator.create(SECRET, _secret(namespace, "Opaque", KEPT))
    assert created["type"] == "Opaque"


async def test_the_operator_token_changes_and_deletes_only_its_own_secrets(
    client: Client, as_operator: Client, namespace: str
) -> None:
    """RBAC grants patch and delete on Secrets (a generated Secret's owner follows
    ``retainOnDelete``, a MongoDBCommunity's connection Secrets follow its users); the
    Secret guard keeps both to Secrets that already were the operator's: a foreign Secret
    can be neither deleted nor taken over by labelling it, the owner of one of ours cannot
    be made something else than one of our kinds, and the data of generated credentials
    never changes (a stolen token cannot rewrite a tenant's password)."""
    theirs = await client.create(
        SECRET, {**_secret(namespace, "Opaque"), "stringData": {"password": "theirs"}}
    )
    name = theirs["metadata"]["name"]
    said = "may only change or delete Secrets already labelled"
    for attack in (
        as_operator.delete(SECRET, name, namespace),
        as_operator.patch(
            SECRET,
            name,
            {"metadata": {"labels": KEPT}, "stringData": {"password": "x"}},
            namespace=namespace,
        ),
    ):
        with pytest.raises(errors.Forbidden) as refused:
            await attack
        assert said in refused.value.message, refused.value.message
    assert (await client.get(SECRET, name, namespace))["data"] == theirs["data"]
    ours = await as_operator.create(
        SECRET, {**_secret(namespace, "Opaque", KEPT), "stringData": {"password": "generated"}}
    )
    ours_name = ours["metadata"]["name"]
    with pytest.raises(errors.Forbidden) as rewritten:
        await as_operator.patch(
            SECRET, ours_name, {"stringData": {"password": "stolen"}}, namespace=namespace
        )
    assert "never changes a Secret's data" in rewritten.value.message, rewritten.value.message
    owner = await client.create(
        CONFIG_MAP,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"generateName": "owner-", "namespace": namespace},
        },
    )
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    with pytest.raises(errors.Forbidden):  # not one of our kinds
        await as_operator.patch(
            SECRET, ours_name, {"metadata": {"ownerReferences": [ref]}}, namespace=namespace
        )
    # One of our kinds, but not the stack the Secret was kept for: refused (issue #46).
    app = await client.create(
        APP_SERVICE,
        {
            "apiVersion": "appstack.dev/v1",
            "kind": "AppService",
            "metadata": {"generateName": "owner-", "namespace": namespace},
            "spec": {"image": "nginx:1.7.9", "size": 1},
        },
    )
    foreign = {**ref, "apiVersion": "appstack.dev/v1", "kind": "AppService"}
    foreign.update(name=app["metadata"]["name"], uid=app["metadata"]["uid"])
    with pytest.raises(errors.Forbidden) as elsewhere:
        await as_operator.patch(
            SECRET, ours_name, {"metadata": {"ownerReferences": [foreign]}}, namespace=namespace
        )
    assert OWNERS in elsewhere.value.message, elsewhere.value.message
    # What the operator does when the stack's retainOnDelete flips: the Secret given to
    # the AppStack its stack label names, and taken back — its data untouched.
    stack = await client.create(APP_STACK, _stack(namespace, KEPT["appstack.dev/stack"]))
    mine = {**ref, "apiVersion": "appstack.dev/v1", "kind": "AppStack"}
    mine.update(name=stack["metadata"]["name"], uid=stack["metadata"]["uid"])
    patch = {"metadata": {"ownerReferences": [mine]}}
    owned = await as_operator.patch(SECRET, ours_name, patch, namespace=namespace)
    assert owned["metadata"]["ownerReferences"][0]["uid"] == stack["metadata"]["uid"]
    assert owned["data"] == ours["data"]
    released = await as_operator.patch(
        SECRET, ours_name, {"metadata": {"ownerReferences": None}}, namespace=namespace
    )
    assert not released["metadata"].get("ownerReferences")
    await as_operator.delete(SECRET, ours_name, namespace)


def _stack(namespace: str, name: str) -> dict[str, Any]:
    """A tenant's AppStack (no operator runs here: nothing reconciles it)."""
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"components": [{"name": "web", "image": "nginx:1.7.9"}]},
    }


DATA = "never changes a Secret's data"
LABELS = "never changes a Secret's app.kubernetes.io/component or appstack.dev/* labels"
OWNERS = "never changes a Secret's ownerReferences"


def _mongodb_owner(name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "MongoDBCommunity",
        "name": name,
        "uid": uid,
        "controller": True,
    }


def _password(secret: dict[str, Any]) -> str:
    return base64.b64decode(secret["data"]["password"]).decode()


async def test_a_generated_password_is_not_rewritten_by_relabelling_it_first(
    client: Client, as_operator: Client, namespace: str
) -> None:
    """Issue #46: one PATCH made a stack's generated credentials look like a MongoDB user's
    Secret (its component, a made-up MongoDBCommunity as controller) and changed its
    data; a second restored the metadata. Now the data may change only where the *old*
    Secret already was a MongoDB user's, under the same controller, uid included — and a
    Secret's component and appstack.dev/* labels and owners stay. Beside it, the
    operator's own rewrite of a MongoDB user's connection Secret (a new password) passes."""
    generated = await as_operator.create(
        SECRET, {**_secret(namespace, "Opaque", KEPT), "stringData": {"password": "generated"}}
    )
    name = generated["metadata"]["name"]
    made_up = _mongodb_owner("made-up", str(uuid.uuid4()))
    relabelled = {
        "metadata": {
            "labels": {"app.kubernetes.io/component": "connection"},
            "ownerReferences": [made_up],
        },
        "stringData": {"password": "stolen"},
    }
    for patch, said in (
        (relabelled, DATA),  # the review's PATCH, all at once
        ({"metadata": relabelled["metadata"]}, LABELS),  # relabelled first, data later
        ({"metadata": {"ownerReferences": [made_up]}}, OWNERS),
        ({"metadata": {"labels": {"appstack.dev/member": "other"}}}, LABELS),
        ({"stringData": {"password": "stolen"}}, DATA),  # the metadata "restored"
    ):
        with pytest.raises(errors.Forbidden) as refused:
            await as_operator.patch(SECRET, name, patch, namespace=namespace)
        assert said in refused.value.message, (patch, refused.value.message)
    now = await client.get(SECRET, name, namespace)
    assert _password(now) == "generated"
    assert now["metadata"]["labels"] == generated["metadata"]["labels"]
    assert not now["metadata"].get("ownerReferences")
    # The operator's own: a MongoDBCommunity (a real one) controls a user's connection
    # Secret; the user's password changes, the Secret's data follows.
    mongodb = await client.create(MONGODB_COMMUNITY, _mongodb(namespace))
    owner = _mongodb_owner(mongodb["metadata"]["name"], mongodb["metadata"]["uid"])
    connection = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": f"{mongodb['metadata']['name']}-admin-my-user",
            "namespace": namespace,
            "labels": {**MANAGED, "app.kubernetes.io/component": "connection"},
            "ownerReferences": [owner],
        },
        "stringData": {"password": "first"},
    }
    await as_operator.create(SECRET, connection)
    user = connection["metadata"]["name"]
    rotated = await as_operator.patch(
        SECRET, user, {"stringData": {"password": "second"}}, namespace=namespace
    )
    assert _password(rotated) == "second"
    # ... but not under another controller (a made-up uid for the same name)
    moved = {**owner, "uid": str(uuid.uuid4())}
    with pytest.raises(errors.Forbidden) as taken:
        await as_operator.patch(
            SECRET,
            user,
            {"metadata": {"ownerReferences": [moved]}, "stringData": {"password": "third"}},
            namespace=namespace,
        )
    assert DATA in taken.value.message, taken.value.message
    assert _password(await client.get(SECRET, user, namespace)) == "second"


def _mongodb(namespace: str) -> dict[str, Any]:
    """The seed's MongoDBCommunity sample in ``namespace`` (nothing reconciles it here)."""
    _, sample = yaml.safe_load_all((ROOT / "examples/mongodbcommunity.yaml").read_text())
    sample["metadata"]["namespace"] = namespace
    return dict(sample)


async def test_managed_middleware_still_gets_its_credentials_under_the_policy(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    stack = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": "vault", "namespace": namespace},
        "spec": {
            "middleware": [{"name": "db", "type": "postgres", "managed": {}}],
            "components": [{"name": "app", "image": "app:1", "uses": ["db"]}],
        },
    }
    await client.create(APP_STACK, stack)
    secret = await until(
        client, SECRET, "vault-db-credentials", namespace, lambda s: True, 60, "credentials"
    )
    assert secret["type"] == "Opaque"
    assert set(secret["data"]) >= {"password", "root-password"}


def _lease(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"holderIdentity": "someone", "leaseDurationSeconds": 15},
    }


async def test_the_operator_token_holds_only_its_own_lease(
    client: Client, as_operator: Client, namespace: str
) -> None:
    foreign = await client.create(LEASE, _lease("kube-scheduler-probe", "kube-system"))
    try:
        foreign["spec"]["holderIdentity"] = "hijacker"
        with pytest.raises(errors.Forbidden):
            await as_operator.update(LEASE, foreign)
        with pytest.raises(errors.Forbidden):
            await as_operator.get(LEASE, "kube-scheduler-probe", "kube-system")
    finally:
        await client.delete(LEASE, "kube-scheduler-probe", "kube-system")
    with pytest.raises(errors.Forbidden):  # no Lease outside the operator's namespace
        await as_operator.create(LEASE, _lease("appstack-operator", namespace))
    # In its own namespace: another Lease's name is off limits, its own is not.
    other = await client.create(LEASE, _lease("other-component", rbac.NAMESPACE))
    try:
        other["spec"]["holderIdentity"] = "hijacker"
        with pytest.raises(errors.Forbidden):
            await as_operator.update(LEASE, other)
    finally:
        await client.delete(LEASE, "other-component", rbac.NAMESPACE)


LEASE_BOUND = "writes a Lease only with spec.leaseDurationSeconds from 1 to 300"


async def test_the_operator_token_holds_its_lease_at_most_five_minutes(
    as_operator: Client, leases_here: str
) -> None:
    """Issue #46: with the token, ``leaseDurationSeconds: 2147483647`` held the Lease — and
    every replica off — for ever. The operator's Lease writes now keep the duration within
    what ``--leader-elect-lease-duration`` accepts (1 to 300 s). Here the leader-election
    Role is in the test's namespace (``leases_here``), as if the operator were installed
    there; beside each refusal the write the operator makes (15 s; 1 s when it lets go)."""
    namespace = leases_here
    lease = _lease(LEASE_NAME, namespace)
    created: dict[str, Any] = {}
    said: list[str] = []

    async def held() -> bool:  # the Role was just applied: RBAC sees it in a moment
        try:
            created.update(await as_operator.create(LEASE, lease))
        except errors.Forbidden as error:
            said.append(error.message)
            return False
        return True

    await eventually(held, timeout=30, what="the Role to let the operator create its Lease")
    assert not [m for m in said if LEASE_BOUND in m], said  # 15 s: only RBAC said no
    for_ever = {**created, "spec": {**created["spec"], "leaseDurationSeconds": 2147483647}}
    with pytest.raises(errors.Forbidden) as refused:
        await as_operator.update(LEASE, for_ever)
    assert LEASE_BOUND in refused.value.message, refused.value.message
    with pytest.raises(errors.Forbidden) as longer:  # create takes any name: bounded too
        await as_operator.create(
            LEASE,
            {**_lease("another", namespace), "spec": {"leaseDurationSeconds": 2147483647}},
        )
    assert LEASE_BOUND in longer.value.message, longer.value.message
    let_go = {
        **created,
        "spec": {**created["spec"], "holderIdentity": "", "leaseDurationSeconds": 1},
    }
    released = await as_operator.update(LEASE, let_go)
    assert released["spec"]["leaseDurationSeconds"] == 1


def _external_stack(namespace: str, name: str, host: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "middleware": [
                {"name": "db", "type": "postgres", "external": {"host": host, "port": 5432}}
            ],
            "components": [{"name": "app", "image": "app:1", "uses": ["db"]}],
        },
    }


def _ready_condition(obj: dict[str, Any]) -> dict[str, Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Ready"), {})


async def _refused_stacks(
    client: Client,
    namespace: str,
    refused: dict[str, tuple[str, str]],
    said: dict[str, str],
    fine: str,
) -> dict[str, dict[str, Any]]:
    """Create a stack per refused host (and one named ``fine`` for an allowed one); wait for
    each to be Ready=False ExternalAddressRefused with ``said[name]`` in its message."""
    for name, (host, _) in refused.items():
        await client.create(APP_STACK, _external_stack(namespace, name, host))
    await client.create(APP_STACK, _external_stack(namespace, "fine", fine))
    stacks = {}
    for name, (host, _) in refused.items():
        stack = await until(
            client,
            APP_STACK,
            name,
            namespace,
            lambda s: _ready_condition(s).get("reason") == "ExternalAddressRefused",
            60,
            f"{host} to be refused",
        )
        message = _ready_condition(stack)["message"]
        assert said[name] in message, message
        stacks[name] = stack
    return stacks


async def test_external_middleware_may_not_point_inside_the_cluster_or_at_the_node(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    refused = {
        "loop": ("127.0.0.1", "127.0.0.0/8"),
        "meta": ("169.254.169.254", "169.254.0.0/16"),
        "svc": ("10.96.0.10", "10.96.0.0/16"),  # the test bed's service range
        "pods": ("10.16.0.5", "10.16.0.0/15"),  # a node's podCIDR
        "six": ("::1", "::1/128"),
    }
    said = {name: f"{host} is in {network}" for name, (host, network) in refused.items()}
    stacks = await _refused_stacks(client, namespace, refused, said, "192.0.2.10")
    for name, stack in stacks.items():
        db = next(m for m in stack["status"]["members"] if m["name"] == "db")
        assert db["state"] == "Failed"
        with pytest.raises(errors.NotFound):  # nothing points there
            await client.get(ENDPOINT_SLICE, f"{name}-db-external", namespace)

    def warned(events: list[dict[str, Any]]) -> set[str]:
        return {e["regarding"]["name"] for e in events if e["reason"] == "ExternalAddressRefused"}

    events = await events_until(
        client, namespace, lambda es: warned(es) >= set(refused), "a Warning for each"
    )
    assert warned(events) == set(refused)
    slice_ = await until(
        client, ENDPOINT_SLICE, "fine-db-external", namespace, lambda s: True, 60, "a slice"
    )
    assert slice_["endpoints"][0]["addresses"] == ["192.0.2.10"]


async def test_addresses_in_disguise_and_names_inside_the_cluster_are_refused_too(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    """Issue #28 P1.4: an IPv6 address carrying a refused IPv4 one (NAT64, 6to4), the cloud
    metadata and platform addresses (Alibaba, Azure), and ExternalNames reaching into the
    cluster or the node (localhost, kubernetes.default, <svc>.<ns>.svc.cluster.local,
    metadata.google.internal) are refused; an ordinary host name is not."""
    refused = {
        "nat": ("64:ff9b::a9fe:a9fe", "169.254.0.0/16"),  # NAT64 of 169.254.169.254
        "six-to-four": ("2002:7f00:1::", "127.0.0.0/8"),  # 6to4 of 127.0.0.1
        "ali": ("100.100.100.200", "100.100.100.200/32"),
        "azure": ("168.63.129.16", "168.63.129.16/32"),
        "local": ("localhost", "names the node"),
        "api": ("kubernetes.default", "names the node"),
        "dns": ("kube-dns.kube-system.svc.cluster.local", "names the node"),
        "gce": ("metadata.google.internal", "names the node"),
    }
    said = {name: why for name, (_, why) in refused.items()}
    for name in await _refused_stacks(client, namespace, refused, said, "db.corp.example.com"):
        with pytest.raises(errors.NotFound):  # nothing points there
            await client.get(SERVICE, f"{name}-db", namespace)
    service = await until(client, SERVICE, "fine-db", namespace, lambda s: True, 60, "fine")
    assert service["spec"]["externalName"] == "db.corp.example.com"


def _ready_reason(obj: dict[str, Any]) -> str:
    return str(_ready_condition(obj).get("reason", ""))


async def _restrict(client: Client, namespace: str) -> None:
    labels = {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "latest",
    }
    await client.patch(NAMESPACE, namespace, {"metadata": {"labels": labels}})


async def test_what_we_create_runs_in_a_restricted_namespace(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await _restrict(client, namespace)
    await client.create(
        APP_SERVICE,
        {
            "apiVersion": "appstack.dev/v1",
            "kind": "AppService",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"image": "nginx:1.27", "size": 2, "ports": [{"port": 80}]},
        },
    )
    stack = _external_stack(namespace, "shop", "db.example.com")
    stack["spec"]["middleware"] = [{"name": "db", "type": "postgres", "managed": {}}]
    await client.create(APP_STACK, stack)
    await until(client, APP_SERVICE, "web", namespace, lambda a: _ready_reason(a) == "Ready", 90)
    await until(client, APP_STACK, "shop", namespace, lambda s: _ready_reason(s) == "Ready", 120)
    pods, _ = await client.list(POD, namespace)
    assert len(pods) == 4  # web x2, the app, the database
    for pod in pods:
        for container in pod["spec"]["containers"]:
            assert container["securityContext"]["allowPrivilegeEscalation"] is False


async def test_pods_that_admission_refuses_make_the_owner_not_ready_with_the_reason(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await _restrict(client, namespace)
    root = {"runAsNonRoot": False, "runAsUser": 0}  # overrides the default, violates the profile
    await client.create(
        APP_SERVICE,
        {
            "apiVersion": "appstack.dev/v1",
            "kind": "AppService",
            "metadata": {"name": "rooted", "namespace": namespace},
            "spec": {"image": "nginx:1.27", "securityContext": root},
        },
    )
    stack = _external_stack(namespace, "rooted", "db.example.com")
    stack["spec"]["components"][0]["securityContext"] = root
    await client.create(APP_STACK, stack)
    app = await until(
        client,
        APP_SERVICE,
        "rooted",
        namespace,
        lambda a: _ready_reason(a) == "ReplicaFailure",
        90,
        "the AppService to report the refused pods",
    )
    assert "violates PodSecurity" in _ready_condition(app)["message"]
    found = await until(
        client,
        APP_STACK,
        "rooted",
        namespace,
        lambda s: _ready_reason(s) == "ReplicaFailure",
        90,
        "the AppStack to report the refused pods",
    )
    member = next(m for m in found["status"]["members"] if m["name"] == "app")
    assert member["state"] == "Failed"
    assert "violates PodSecurity" in _ready_condition(found)["message"]

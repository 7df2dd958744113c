"""appstack installed sharded (issue #50, ``appstack manifests --shards``): its generated
RBAC and admission guards are enough for the shards and bound them, and a tenant cannot
touch the shard labels.

* the guard: a tenant (a ServiceAccount bound in its namespace to the generated editor
  ClusterRole) may neither create an AppService with the shard or drain label nor set,
  change or remove them later, while its own edits go through; the operator's token may
  change those two labels and no other (the kinds policy), an administrator is not bound;
* the install: two ``appstack run --sharding`` processes under the operator's
  ServiceAccount token and the sharded RBAC (the leader-election Role of the sharded
  install, in the test's namespace: the Leases there) — AppServices of an enabled
  namespace labelled to their owners among the live shards and Ready, one shard stopped
  (its keys handed back, its Lease deleted by the coordinator, its keys on the other),
  the coordinator's gauges on ``/metrics`` saying so (keys per shard, none unassigned,
  no drain in flight), both exiting 0, and no write refused in their logs.

Serial: it swaps the shared install's ClusterRole and admission policies
(``appstack-system``) for the sharded install's and back — the policies match the
operator's marker, so the unsharded ones would refuse the shards' label patches, and the
sharded ones would relax the kinds policy the other tests check. Every appstack install's
policies bind every appstack operator's token (whoever holds the guards' marker): another
install's, unsharded, left on the cluster refuses the shards' label patches whatever this
module swaps — what failed it in the full suite (test_install_namespaced.py left its
install's policies behind; it removes them now). So it checks first that none is there, and
waits, when done, until the unsharded install's RBAC refuses the label patch again.
"""

from __future__ import annotations

import json
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from lightkube import ApiError, KubeConfig, codecs
from lightkube import Client as LightClient
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.models.rbac_v1 import RoleRef, Subject
from lightkube.resources.admissionregistration_v1 import (
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
)
from lightkube.resources.core_v1 import Namespace, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import RoleBinding
from lightkube.types import PatchType
from prometheus_client.parser import text_string_to_metric_families

from appstack.api.identity import IDENTITY
from appstack.api.namespaces import ENABLED
from appstack.controllers.appservice import APP_SERVICE
from appstack.manifests import bundle, rbac
from appstack.manifests.install import InstallOptions
from appstack.runtime import DEPLOYMENT, LEASE, errors
from appstack.runtime.client import Client
from appstack.runtime.sharding import owner, root_key
from appstack.sdk import GUARD_RESOURCE
from appstack_testbed.replica import Replica, free_port
from appstack_testbed.waiting import condition_status, eventually, eventually_sync
from tests.e2e.conftest import apply_objects, service_account_kubeconfig
from tests.e2e.replicas import app_service
from tests.e2e.shard_harness import live_shards

pytestmark = pytest.mark.serial

GenericAppService = create_namespaced_resource("appstack.dev", "v1", "AppService", "appservices")

SHARD, DRAIN = IDENTITY.shard_labels
SHARD_OF = f"{IDENTITY.key('shard-of')}={rbac.LEASE_NAME}"
EDITOR = rbac.cluster_name("appstack-editor", rbac.NAMESPACE)
GUARD = f"{IDENTITY.project}-shard-labels-{rbac.NAMESPACE}"
APPS = 6
PROBE = "shard-guard-probe"
#: The unsharded install's refusal of the probe's patch: its ClusterRole grants no patch of
#: AppServices (a sharded one does: the shard labels are patched).
UNSHARDED = 'cannot patch resource "appservices"'

# the probe's namespace: enabled for appstack (the operator's own namespace is not: the
# writes policy refuses the operator any write there, sharded or not)
PROBE_NAMESPACE = f"shard-probe-{uuid.uuid4().hex[:6]}"


REFUSED: list[str] = []  # the last refusal of the probe: what a timeout reports
#: What the API server's authorizer is asked in the match conditions of every policy that
#: binds appstack's operator (the guards' marker; appstack.sdk.guards.subject).
MARKER_CHECK = f"authorizer.group('{IDENTITY.domain}').resource('{GUARD_RESOURCE}')"


def _label_patch_admitted(as_operator: LightClient) -> bool:
    """Whether a dry-run patch of the probe's shard label by the operator is admitted."""
    try:
        as_operator.patch(
            GenericAppService,
            PROBE,
            _labels(**{SHARD: "s"}),
            namespace=PROBE_NAMESPACE,
            patch_type=PatchType.MERGE,
            dry_run=True,
        )
    except ApiError as refused:
        if refused.status.code != 403:
            raise
        REFUSED[:] = [str(refused.status.message)]
        return False
    return True


def _foreign_policies(kube: LightClient) -> list[str]:
    """Policies that bind appstack's operator (they ask for its marker) but are not the
    shared install's: another install's. Every install's policies hold every appstack
    operator's token (docs/security.md), so an unsharded one left on the cluster refuses
    the shard-label patches for ever."""
    ours = {o["metadata"]["name"] for o in bundle.permissions(InstallOptions(shards=2))}
    return sorted(
        policy.metadata.name
        for policy in kube.list(ValidatingAdmissionPolicy)
        if policy.metadata.name not in ours
        and any(
            MARKER_CHECK in condition.expression for condition in policy.spec.matchConditions or []
        )
    )


@pytest.fixture(scope="module")
def sharded_install(kube: LightClient, operator_kubeconfig: Path) -> Iterator[None]:
    """The shared install's permissions as ``appstack manifests --shards 2`` makes them
    (once the API server enforces them: the operator's token may patch a shard label),
    then back as they were (the shard-labels guard removed)."""
    foreign = _foreign_policies(kube)
    assert not foreign, f"another appstack install's policies bind the operator: {foreign}"
    apply_objects(kube, bundle.permissions(InstallOptions(shards=2)))
    enabled = ObjectMeta(name=PROBE_NAMESPACE, labels={ENABLED: "true"})
    kube.create(Namespace(metadata=enabled))
    probe = codecs.from_dict(app_service(PROBE, PROBE_NAMESPACE))
    kube.apply(probe, force=True)
    as_operator = LightClient(config=KubeConfig.from_file(str(operator_kubeconfig)))
    try:
        eventually_sync(
            lambda: _label_patch_admitted(as_operator),
            timeout=15,
            what="the sharded install's guards enforced",
            diagnose=lambda: [*REFUSED, f"other installs' policies: {_foreign_policies(kube)}"],
        )
        yield
    finally:  # the shared install first: nothing below may leave it sharded
        apply_objects(kube, bundle.permissions())
        kube.delete(ValidatingAdmissionPolicyBinding, GUARD)
        kube.delete(ValidatingAdmissionPolicy, GUARD)
        try:  # the tests after this one see the unsharded RBAC in force
            eventually_sync(
                lambda: not _label_patch_admitted(as_operator) and UNSHARDED in REFUSED[0],
                timeout=15,
                what="the unsharded install's RBAC enforced again",
                diagnose=lambda: REFUSED,
            )
        finally:
            kube.delete(Namespace, PROBE_NAMESPACE)


@pytest.fixture
async def tenant(
    kube: LightClient, kubeconfig: Path, namespace: str, tmp_path: Path
) -> AsyncIterator[Client]:
    """ServiceAccount ``tenant`` of the test's namespace, bound there to the editor role."""
    meta = ObjectMeta(name="tenant", namespace=namespace)
    kube.create(ServiceAccount(metadata=meta))
    kube.create(
        RoleBinding(
            metadata=meta,
            roleRef=RoleRef(apiGroup="rbac.authorization.k8s.io", kind="ClusterRole", name=EDITOR),
            subjects=[Subject(kind="ServiceAccount", name="tenant", namespace=namespace)],
        )
    )
    path = service_account_kubeconfig(kube, kubeconfig, namespace, tmp_path / "tenant", "tenant")
    async with await Client.connect(str(path)) as as_tenant:
        yield as_tenant


@pytest.fixture
async def operator(operator_kubeconfig: Path) -> AsyncIterator[Client]:
    async with await Client.connect(str(operator_kubeconfig)) as as_operator:
        yield as_operator


def _labels(**labels: str | None) -> dict[str, Any]:
    return {"metadata": {"labels": labels}}


async def _refused(call: Any) -> str:
    with pytest.raises(errors.Forbidden) as refused:
        await call
    return str(refused.value)


async def _create_refused(as_tenant: Client, admin: Client, obj: dict[str, Any]) -> str:
    """Why creating ``obj`` is refused; "" if it was created (then deleted again: the
    guard was not enforced yet)."""
    try:
        await as_tenant.create(APP_SERVICE, obj)
    except errors.Forbidden as refused:
        return str(refused)
    meta = obj["metadata"]
    await admin.delete(APP_SERVICE, meta["name"], meta["namespace"])
    return ""


async def test_only_the_operator_changes_the_shard_labels(
    sharded_install: None, client: Client, tenant: Client, operator: Client, namespace: str
) -> None:
    labelled = app_service("labelled", namespace)
    labelled["metadata"]["labels"] = {SHARD: "appstack-operator-shard-0123456789"}
    # the guard is enforced a moment after it is created
    said = await eventually(
        lambda: _create_refused(tenant, client, labelled),
        lambda message: SHARD in message,
        timeout=15,
        what="the shard-labels guard enforced",
    )
    assert "only the appstack operator sets the labels" in said
    await tenant.create(APP_SERVICE, app_service("web", namespace))
    for labels in ({SHARD: "appstack-operator-shard-0123456789"}, {DRAIN: "x"}):
        await _refused(tenant.patch(APP_SERVICE, "web", _labels(**labels), namespace=namespace))
    await tenant.patch(APP_SERVICE, "web", _labels(team="a"), namespace=namespace)  # its own

    # the operator's token: those two labels, nothing else
    both = _labels(**{SHARD: "s1", DRAIN: "s1"})
    await operator.patch(APP_SERVICE, "web", both, namespace=namespace)
    said = await _refused(
        operator.patch(APP_SERVICE, "web", _labels(team="b"), namespace=namespace)
    )
    assert "never their spec, labels (but the shard labels" in said
    for labels in ({SHARD: "s2"}, {DRAIN: None}, {SHARD: None}):
        await _refused(tenant.patch(APP_SERVICE, "web", _labels(**labels), namespace=namespace))
    # an update with what the tenant read keeps them: fine; one that drops them is not
    web = await tenant.get(APP_SERVICE, "web", namespace)
    web["spec"]["image"] = "nginx:1.28"
    web = await tenant.update(APP_SERVICE, web)
    del web["metadata"]["labels"][SHARD]
    await _refused(tenant.update(APP_SERVICE, web))
    none = _labels(**{SHARD: None, DRAIN: None})
    await operator.patch(APP_SERVICE, "web", none, namespace=namespace)
    # an administrator is not bound (a restore may carry them)
    await client.patch(APP_SERVICE, "web", _labels(**{SHARD: "s3"}), namespace=namespace)


async def _off_owners(client: Client, namespace: str, shards: set[str]) -> list[str]:
    """Every AppService not yet labelled to its owner among ``shards`` (or drained, or not
    Ready), as ``name shard drain ready``; ``["none"]`` before they are all there."""
    items, _ = await client.list(APP_SERVICE, namespace)
    off = []
    for app in items:
        labels = app["metadata"].get("labels") or {}
        name = app["metadata"]["name"]
        key = root_key("appstack.dev", "AppService", namespace, name)
        ready = condition_status(app, "Ready")
        if DRAIN in labels or labels.get(SHARD) != owner(key, shards) or ready != "True":
            off.append(f"{name} {labels.get(SHARD)} {labels.get(DRAIN)} {ready}")
    return off if len(items) == APPS else ["none"]


def _names(namespace: str, live: dict[str, str]) -> dict[tuple[str, int], str]:
    """(process, i) -> an AppService name whose owner is that process's shard: half of
    :data:`APPS` for each, so that both shards work (the hash decides, not the test)."""
    shards = set(live.values())
    chosen: dict[tuple[str, int], str] = {}
    for i in range(1000):
        name = f"app-{i}"
        mine = owner(root_key("appstack.dev", "AppService", namespace, name), shards)
        process = next(p for p, shard in live.items() if shard == mine)
        n = sum(1 for p, _ in chosen if p == process)
        if n < APPS // 2:
            chosen[process, n] = name
        if len(chosen) == APPS:
            return chosen
    raise AssertionError("no names found for both shards")


def _plain_metrics(port: int) -> tuple[str, ...]:
    """``appstack run``'s flags for ``/metrics`` on ``port``, plain HTTP, no token asked."""
    return (f"--metrics-bind-address=127.0.0.1:{port}", "--no-metrics-auth", "--no-metrics-secure")


def _refusals(logs: Path) -> list[str]:
    """Every log line of the processes about a write refused (by RBAC or admission)."""
    found = []
    for path in logs.glob("*.log"):
        for line in path.read_text().splitlines():
            lowered = line.lower()
            if "forbidden" in lowered or "denied" in lowered or '"status": 403' in lowered:
                found.append(f"{path.stem}: {line[:400]}")
    return found


async def test_appstack_sharded_under_its_install(  # noqa: PLR0917 - fixtures
    sharded_install: None,
    kube: LightClient,
    kubeconfig: Path,
    client: Client,
    namespace: str,
    tmp_path: Path,
) -> None:
    # the sharded leader-election Role, here: the processes' Leases are in this namespace
    for obj in (
        rbac.leader_election_role(namespace, sharded=True),
        rbac.leader_election_role_binding(namespace, rbac.NAMESPACE),
    ):
        kube.apply(codecs.from_dict(obj), force=True)
    token = service_account_kubeconfig(kube, kubeconfig, rbac.NAMESPACE, tmp_path / "sa")
    args = ("--sharding", "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s")
    metrics = {name: free_port() for name in ("sa", "sb")}  # the coordinator's gauges
    replicas = [
        Replica(name, token, namespace, tmp_path, *args, *_plain_metrics(metrics[name]))
        for name in ("sa", "sb")
    ]
    try:
        for replica in replicas:
            await replica.wait_ready()
        live = await eventually(
            lambda: live_shards(client, namespace, SHARD_OF),
            lambda shards: set(shards) == {"sa", "sb"},
            timeout=15,
            what="both shards' Leases held",
        )
        names = _names(namespace, live)
        for name in names.values():
            await client.create(APP_SERVICE, app_service(name, namespace))
        await eventually(
            lambda: _off_owners(client, namespace, set(live.values())),
            lambda off: not off,
            timeout=30,
            what="every AppService on its owner and Ready",
        )
        election = await client.get(LEASE, rbac.LEASE_NAME, namespace)
        leader = election["spec"]["holderIdentity"].split("_")[0]
        # the coordinator's gauges: none waiting, no drain left (the keys per shard are
        # counted by full sweeps: at the next change of the shards)
        balanced = {"unassigned": 0, "oldest": 0, "drains": 0}
        await eventually(
            lambda: _shard_gauges(metrics[leader]),
            lambda gauges: {k: v for k, v in gauges.items() if k != "keys"} == balanced,
            timeout=15,
            what="the coordinator's gauges: every key assigned",
        )
        # stop the one that does not coordinate: its keys handed back, its Lease deleted
        (leaving,) = [r for r in replicas if r.name != leader]
        leaving.signal(signal.SIGTERM)
        assert await leaving.wait_exit(20) == 0, leaving.log()
        await eventually(
            lambda: client.list(LEASE, namespace, label_selector=SHARD_OF),
            lambda found: [lease["metadata"]["name"] for lease in found[0]] == [live[leader]],
            timeout=15,
            what="the stopped shard's Lease deleted",
        )
        await eventually(
            lambda: _off_owners(client, namespace, {live[leader]}),
            lambda off: not off,
            timeout=15,
            what="every AppService on the shard left",
        )
        left = {**balanced, "keys": {live[leader]: APPS}}
        await eventually(
            lambda: _shard_gauges(metrics[leader]),
            lambda gauges: gauges == left,
            timeout=15,
            what="the coordinator's gauges: every key on the shard left",
        )
        # the key moved is reconciled by the shard left: a change reaches its Deployment
        moved = names[(leaving.name, 0)]
        image = {"spec": {"image": "nginx:1.28"}}
        await client.patch(APP_SERVICE, moved, image, namespace=namespace)
        await eventually(
            lambda: client.get(DEPLOYMENT, moved, namespace),
            lambda d: d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28",
            timeout=15,
            what=f"{moved}'s new image applied by the shard left",
        )
        (staying,) = [r for r in replicas if r.name == leader]
        staying.signal(signal.SIGTERM)
        assert await staying.wait_exit(20) == 0, staying.log()
    finally:
        for replica in replicas:
            replica.kill()
    assert not _refusals(tmp_path), "\n".join(_refusals(tmp_path))
    # the logs are JSON lines of both processes (else the check above reads nothing)
    assert all(
        any(map(_json, (tmp_path / f"{r.name}.log").read_text().splitlines())) for r in replicas
    )


async def _shard_gauges(port: int) -> dict[str, Any]:
    """The coordinator's sharding gauges on ``/metrics`` at ``port``: the largest unassigned
    count, oldest wait and drains in flight over the primary kinds, and the AppServices per
    shard."""
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"http://127.0.0.1:{port}/metrics", timeout=5)).text
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]

    def most(name: str) -> float | None:
        return max((s.value for s in samples if s.name == f"appstack_shard_{name}"), default=None)

    return {
        "unassigned": most("unassigned_keys"),
        "oldest": most("oldest_unassigned_seconds"),
        "drains": most("drains_in_flight"),
        "keys": {
            s.labels["shard"]: s.value
            for s in samples
            if s.name == "appstack_shard_keys" and s.labels["resource"] == str(APP_SERVICE)
        },
    }


def _json(line: str) -> dict[str, Any]:
    try:
        entry = json.loads(line)
    except ValueError:
        return {}
    return entry if isinstance(entry, dict) else {}

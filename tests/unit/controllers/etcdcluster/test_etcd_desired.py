"""EtcdCluster's model, children, member pods and status (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.etcdcluster import EtcdCluster, EtcdClusterSpec, EtcdClusterStatus
from appstack.controllers.etcdcluster import desired, status
from appstack.controllers.etcdcluster.observe import Observation, image_version, pod_view
from appstack.controllers.etcdcluster.plan import MemberView, Observed, Step

OBJ: dict[str, Any] = {
    "apiVersion": "appstack.dev/v1",
    "kind": "EtcdCluster",
    "metadata": {"name": "e", "namespace": "ns", "uid": "u-1", "generation": 4},
    "spec": {"replicas": 3, "storage": "10Gi"},
}


def spec(**extra: Any) -> EtcdClusterSpec:
    """The spec of a whole EtcdCluster, validated as admission validates it (CEL rules too)."""
    obj = {**OBJ, "spec": {"replicas": 3, "storage": "10Gi", **extra}}
    return EtcdCluster.model_validate(obj).spec


def test_the_seed_example_is_valid_and_even_counts_need_asking() -> None:
    cluster = EtcdCluster.model_validate({"metadata": {"name": "my-etcd-cluster"}, **OBJ})
    assert cluster.spec.image == "gcr.io/etcd-development/etcd:v3.6.16"
    with pytest.raises(ValidationError, match="replicas must be odd") as caught:
        spec(replicas=4)
    assert [e["loc"] for e in caught.value.errors()] == [("spec", "replicas")]
    assert spec(replicas=4, allowEvenReplicas=True).replicas == 4
    with pytest.raises(ValidationError, match="version"):
        spec(version="3.4.0")


def test_peer_urls_name_member_pods_through_the_headless_service() -> None:
    url = desired.peer_url(OBJ, "e-2")
    assert url == "http://e-2.e.ns.svc:2380"
    assert desired.pod_of_peer_url(OBJ, url) == "e-2"
    assert desired.pod_of_peer_url(OBJ, "http://e-2.other.ns.svc:2380") == ""
    assert desired.pod_of_peer_url(OBJ, "http://127.0.0.1:2380") == ""


ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/zone"}]
    }
}


def test_member_pod_binds_to_its_pod_ip_and_carries_the_overrides() -> None:
    overrides = spec(
        nodeSelector={"disktype": "true"},
        tolerations=[{"key": "disktype", "operator": "Exists"}],
        priorityClassName="high",
        affinity=ANTI,
        resources={"requests": {"cpu": "100m"}},
    )
    initial = {"e-0": desired.peer_url(OBJ, "e-0"), "e-1": desired.peer_url(OBJ, "e-1")}
    pod = desired.member_pod(OBJ, overrides, "e-1", initial, new_cluster=False, voter=False)
    container = pod["spec"]["containers"][0]
    args = container["args"]
    assert "--listen-client-urls=http://$(POD_IP):2379" in args
    assert "--listen-peer-urls=http://$(POD_IP):2380" in args
    assert "--initial-advertise-peer-urls=http://e-1.e.ns.svc:2380" in args
    assert "--initial-cluster=e-0=http://e-0.e.ns.svc:2380,e-1=http://e-1.e.ns.svc:2380" in args
    assert "--initial-cluster-state=existing" in args
    assert container["image"] == "gcr.io/etcd-development/etcd:v3.6.16"
    assert pod["metadata"]["labels"][desired.VOTER] == "false"
    assert pod["spec"]["hostname"] == "e-1"
    assert pod["spec"]["subdomain"] == "e"
    assert pod["spec"]["nodeSelector"] == {"disktype": "true"}
    assert pod["spec"]["tolerations"] == [{"key": "disktype", "operator": "Exists"}]
    assert pod["spec"]["priorityClassName"] == "high"
    assert pod["spec"]["affinity"] == ANTI
    assert container["resources"] == {"requests": {"cpu": "100m"}}
    assert pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "data-e-1"
    assert image_version(pod) == "3.6.16"
    # a member under NOSPACE still serves reads and deletes: it stays in the client Service
    assert container["readinessProbe"]["httpGet"]["path"] == "/health?exclude=NOSPACE"


def test_children_services_and_a_quorum_keeping_budget() -> None:
    headless, front, budget = desired.children(OBJ, spec(replicas=5))
    assert headless["spec"]["clusterIP"] == "None"
    assert front["metadata"]["name"] == "e-client"
    assert front["spec"]["selector"][desired.VOTER] == "true"
    assert budget["spec"]["minAvailable"] == 3
    claim = desired.volume(OBJ, spec(storageClassName="fast"), "e-0")
    assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"
    assert claim["spec"]["storageClassName"] == "fast"


def test_spread_constraints_reach_the_members_beside_the_default_anti_affinity() -> None:
    """PodScheduling's fourth field, new to EtcdCluster: given to the member pods as
    AppService gives it to its Deployment's; the default anti-affinity stays unless
    ``affinity`` itself is set."""
    zone = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": desired.selector("e")},
    }
    pod = desired.member_pod(
        OBJ, spec(topologySpreadConstraints=[zone]), "e-0", {}, new_cluster=True, voter=True
    )
    assert pod["spec"]["topologySpreadConstraints"] == [zone]
    assert pod["spec"]["affinity"] == desired.spread("e")
    plain = desired.member_pod(OBJ, spec(), "e-0", {}, new_cluster=True, voter=True)
    assert "topologySpreadConstraints" not in plain["spec"]
    with pytest.raises(ValidationError, match="topologySpreadConstraints"):
        spec(topologySpreadConstraints=[{**zone, "whenUnsatisfiable": "Never"}])


def test_pod_view_reads_readiness_ip_version_and_deletion() -> None:
    pod = desired.member_pod(OBJ, spec(), "e-0", {}, new_cluster=True, voter=True)
    assert pod["spec"]["automountServiceAccountToken"] is False  # etcd needs no API token
    # members prefer different nodes by default (preferred: more members than nodes start)
    (term,) = pod["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == desired.selector("e")
    mine = {"nodeAffinity": {}}
    own = desired.member_pod(OBJ, spec(affinity=mine), "e-0", {}, new_cluster=True, voter=True)
    assert own["spec"]["affinity"] == mine
    pod["status"] = {"podIP": "127.1.0.5", "conditions": [{"type": "Ready", "status": "True"}]}
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    view = pod_view(pod)
    assert (view.ip, view.ready, view.version, view.deleting) == ("127.1.0.5", True, "3.6.16", True)


def _observation(members: list[MemberView], leader: int) -> Observation:
    seen = Observed("e", 3, "3.6.16", {}, {}, members, leader=leader, bootstrapped=True)
    return Observation(seen, {}, 0xABC, None, {}, {})


def test_status_lists_members_leader_and_conditions() -> None:
    members = [
        MemberView(1, "e-0", True, False, True, 10, "3.6.16"),
        MemberView(2, "e-1", True, False, True, 10, "3.5.21"),
        MemberView(3, "e-2", True, False, False, 0, ""),
    ]
    out = status.from_observation(OBJ, _observation(members, 2), Step("Wait", "w"), "now").to_dict()
    assert out["leader"] == "e-1"
    assert out["readyMembers"] == 2
    assert out["clusterID"] == "abc"
    assert out["version"] == "3.5.21"  # the lowest
    # the scale subresource's view (kubectl scale, HPA): members and their pods' selector
    assert out["replicas"] == 3
    assert out["selector"] == (
        "app.kubernetes.io/component=etcd,app.kubernetes.io/instance=e,app.kubernetes.io/name=e"
    )
    assert out["members"][1] == {
        "name": "e-1",
        "id": "2",
        "peerURL": "http://e-1.e.ns.svc:2380",
        "healthy": True,
        "isLeader": True,
        "isLearner": False,
        "version": "3.5.21",
    }
    conditions = {c["type"]: (c["status"], c["reason"]) for c in out["conditions"]}
    assert conditions == {
        "Available": ("True", "Quorum"),
        "Progressing": ("True", "Wait"),
        "Degraded": ("True", "MemberUnhealthy"),
    }
    assert out["observedGeneration"] == 4
    # every field is one the CRD's schema has (the API server prunes any other)
    assert EtcdClusterStatus.model_validate(out).to_dict() == out


def test_status_of_a_cluster_without_quorum() -> None:
    members = [MemberView(i, f"e-{i}", True, False, i == 0, 0, "") for i in range(3)]
    lost = Step("Degraded", "quorum lost: 1 of 3 members answer, 2 are needed; restore ...")
    out = status.from_observation(OBJ, _observation(members, 0), lost, "now").to_dict()
    conditions = {c["type"]: (c["status"], c["reason"], c["message"]) for c in out["conditions"]}
    assert conditions["Available"][:2] == ("False", "NoQuorum")
    assert conditions["Degraded"] == ("True", "QuorumLost", lost.reason)
    assert conditions["Progressing"][0] == "False"


def test_without_a_member_list_the_last_one_is_kept_unhealthy() -> None:
    members = [MemberView(i, f"e-{i}", True, False, True, 10, "3.6.16") for i in range(3)]
    first = status.from_observation(
        OBJ, _observation(members, 1), Step("Done", "ok"), "t1"
    ).to_dict()
    unknown = Observation(
        Observed("e", 3, "3.6.16", {}, {}, None, bootstrapped=True), {}, 0, None, {}, {}
    )
    later = status.from_observation(
        {**OBJ, "status": first}, unknown, Step("Degraded", "q"), "t2"
    ).to_dict()
    assert [m["name"] for m in later["members"]] == ["e-0", "e-1", "e-2"]
    assert not any(m["healthy"] or m["isLeader"] for m in later["members"])
    assert later["clusterID"] == "abc"
    assert later["readyMembers"] == 0


def test_member_volumes_are_owned_unless_retained_on_delete() -> None:
    owned = desired.volume(OBJ, spec(), "e-0")
    assert owned["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert "annotations" not in owned["metadata"]
    assert not desired.retained(owned)
    assert desired.owns_volume(OBJ, owned)
    # created owned all the same (the writes policy refuses an ownerless create) ...
    assert desired.volume(OBJ, spec(retainOnDelete=True), "e-0") == owned
    # ... then released by a merge patch
    release = desired.volume_owner(OBJ, retain=True)
    assert release == {"ownerReferences": None, "annotations": {desired.CLUSTER_UID: "u-1"}}
    kept = {**owned, "metadata": {**owned["metadata"], **release}}
    kept["metadata"].pop("ownerReferences")
    assert desired.retained(kept)
    assert desired.owns_volume(OBJ, kept)  # this cluster's, by UID ...
    namesake = {**OBJ, "metadata": {**OBJ["metadata"], "uid": "u-2"}}
    assert not desired.owns_volume(namesake, kept)  # ... not a later cluster of the same name
    back = desired.volume_owner(OBJ, retain=False)
    assert back["ownerReferences"][0]["uid"] == "u-1"
    assert back["annotations"] == {desired.CLUSTER_UID: None}
    assert spec().retain_on_delete is False  # the default: deleted with the cluster

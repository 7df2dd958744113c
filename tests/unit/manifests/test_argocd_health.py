"""The Argo CD health scripts (manifests/argocd.py), run by a Lua 5.1 interpreter as Argo
CD's gopher-lua runs them, against the status the controllers' own status functions write."""

from __future__ import annotations

from typing import Any

import yaml
from lupa import lua51

from appstack.api.appstack import MemberStatus
from appstack.controllers.appservice.status import from_children
from appstack.controllers.appstack.status import from_members
from appstack.controllers.crontab.status import from_cron_job
from appstack.manifests import argocd
from appstack.sdk.kit.conditions import Problem

DEPLOY = argocd.__file__.rsplit("/src/", 1)[0] + "/deploy/argocd/health-patch.yaml"


def health(kind: str, obj: dict[str, Any]) -> tuple[str, str]:
    runtime = lua51.LuaRuntime()
    runtime.globals()["obj"] = runtime.table_from(obj, recursive=True)
    result = runtime.execute(argocd.health_script(kind))
    return str(result["status"]), str(result["message"])


def _obj(generation: int, status: dict[str, Any] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "x", "generation": generation, "uid": "u"}}
    if status is not None:
        obj["status"] = status
    return obj


def _deployment(ready: int, minimum: bool) -> dict[str, Any]:
    return {
        "metadata": {"generation": 1},
        "status": {
            "observedGeneration": 1,
            "replicas": 2,
            "readyReplicas": ready,
            "updatedReplicas": 2,
            "availableReplicas": ready,
            "conditions": [{"type": "Available", "status": "True" if minimum else "False"}],
        },
    }


def _appservice(
    deployment: dict[str, Any] | None, problem: Problem | None = None
) -> dict[str, Any]:
    app = _obj(2, None)
    status = from_children(
        app,
        size=2,
        deployment=deployment,
        service_expected=False,
        service=None,
        problem=problem,
        selector="s",
    ).to_dict()
    return {**app, "status": status}


def test_an_appservice_is_healthy_progressing_or_degraded_as_its_status_says() -> None:
    assert health("AppService", _obj(1, None))[0] == "Progressing"
    assert health("AppService", _appservice(_deployment(2, True))) == (
        "Healthy",
        "2/2 replicas available",
    )
    assert health("AppService", _appservice(_deployment(1, True)))[0] == "Progressing"
    status, message = health(
        "AppService", _appservice(None, Problem("ImagePullBackOff", "pod x: no such image"))
    )
    assert (status, message) == ("Degraded", "ImagePullBackOff: pod x: no such image")
    stale = _appservice(_deployment(2, True))
    stale["metadata"]["generation"] = 3  # the operator has not seen the last change yet
    assert health("AppService", stale)[0] == "Progressing"


def test_an_appstack_and_a_crontab() -> None:
    member = MemberStatus(name="db", kind="Component", ready="1/1", state="Ready")
    stack = _obj(1, None)
    assert health("AppStack", {**stack, "status": from_members(stack, [member], None).to_dict()})[
        0
    ] == ("Healthy")
    waiting = MemberStatus(name="web", kind="Component", ready="0/1", state="Progressing")
    up = from_members(stack, [member, waiting], None).to_dict()
    assert health("AppStack", {**stack, "status": up})[0] == "Progressing"
    bad = from_members(
        stack, [member], Problem("CredentialsNotFound", "Secret s not found")
    ).to_dict()
    assert health("AppStack", {**stack, "status": bad})[0] == "Degraded"

    tab = _obj(1, None)
    tab["spec"] = {"cronSpec": "*/5 * * * *", "suspend": False}
    cron = {"spec": {"schedule": "*/5 * * * *"}, "status": {}}
    assert health("CronTab", {**tab, "status": from_cron_job(tab, cron, None, "t").to_dict()})[
        0
    ] == ("Healthy")
    failed = {
        "metadata": {"name": "x-1", "creationTimestamp": "t"},
        "status": {
            "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]
        },
    }
    status = from_cron_job(tab, cron, None, "t", jobs=[failed]).to_dict()
    assert health("CronTab", {**tab, "status": status})[0] == "Degraded"
    tab["spec"]["suspend"] = True
    assert health("CronTab", {**tab, "status": from_cron_job(tab, cron, None, "t").to_dict()})[
        0
    ] == ("Suspended")


def test_an_etcd_cluster_is_healthy_when_available() -> None:
    cond = {"type": "Available", "status": "True", "reason": "Quorum", "message": "3 of 3"}
    status = {"observedGeneration": 1, "conditions": [cond]}
    assert health("EtcdCluster", _obj(1, status)) == ("Healthy", "3 of 3")
    lost = {**cond, "status": "False", "reason": "NoQuorum"}
    degraded = {"type": "Degraded", "status": "True", "reason": "QuorumLost", "message": "1 of 3"}
    status = {"observedGeneration": 1, "conditions": [lost, degraded]}
    assert health("EtcdCluster", _obj(1, status)) == ("Degraded", "QuorumLost: 1 of 3")


def test_the_shipped_patch_has_a_script_per_kind() -> None:
    with open(DEPLOY) as f:
        patch = yaml.safe_load(f)
    assert patch["metadata"]["name"] == "argocd-cm"
    assert sorted(patch["data"]) == [
        f"resource.customizations.health.appstack.dev_{kind}"
        for kind in ("AppService", "AppStack", "CronTab", "EtcdCluster", "MongoDBCommunity")
    ]
    assert patch["data"]["resource.customizations.health.appstack.dev_EtcdCluster"] == (
        argocd.health_script("EtcdCluster")
    )

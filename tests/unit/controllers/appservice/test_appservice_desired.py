"""AppService → Deployment/Service and status, without a cluster."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appservice import AppServiceSpec
from appstack.controllers.appservice import desired
from appstack.controllers.appservice.status import from_children
from appstack.sdk.kit.compare import is_subset
from appstack.sdk.kit.conditions import Problem

SEED = {
    "size": 2,
    "image": "nginx:1.7.9",
    "ports": [{"port": 80, "targetPort": 80, "nodePort": 30002}],
}


def _app(spec: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": "web", "namespace": "ns", "uid": "u-1", "generation": generation},
        "spec": spec,
    }


def test_the_seed_sample_becomes_a_two_replica_deployment_and_a_node_port_service() -> None:
    app = _app(SEED)
    spec = AppServiceSpec.model_validate(SEED)

    deployment = desired.deployment(app, spec)
    service = desired.service(app, spec)

    assert deployment["metadata"]["name"] == "web"
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "nginx:1.7.9"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert service is not None
    assert service["spec"]["type"] == "NodePort"
    assert service["spec"]["ports"] == [
        {"protocol": "TCP", "port": 80, "targetPort": 80, "nodePort": 30002}
    ]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    for child in (deployment, service):
        assert child["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "appstack"
        (owner,) = child["metadata"]["ownerReferences"]
        assert owner["controller"] is True
        assert owner["uid"] == "u-1"


def test_service_type_defaults_to_cluster_ip_without_node_ports_and_no_ports_means_no_service() -> (
    None
):
    spec = AppServiceSpec.model_validate({"image": "x", "ports": [{"port": 8080}]})
    service = desired.service(_app({}), spec)
    assert service is not None
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"][0]["targetPort"] == 8080
    assert desired.service(_app({}), AppServiceSpec.model_validate({"image": "x"})) is None


def test_env_resources_probes_and_pod_metadata_reach_the_pod_template() -> None:
    spec = AppServiceSpec.model_validate(
        {
            "image": "api:1",
            "command": ["serve"],
            "args": ["--port=8080"],
            "envs": [
                {"name": "MODE", "value": "prod"},
                {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}},
            ],
            "resources": {
                "limits": {"cpu": "500m", "memory": "256Mi"},
                "requests": {"cpu": "100m"},
            },
            "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}},
            "podLabels": {"team": "a", "app.kubernetes.io/name": "hijack"},
            "podAnnotations": {"prometheus.io/scrape": "true"},
            "imagePullSecrets": [{"name": "regcred"}],
            "serviceAccountName": "api",
        }
    )
    template = desired.deployment(_app({}), spec)["spec"]["template"]
    (container,) = template["spec"]["containers"]
    assert container["env"][1] == {
        "name": "PASSWORD",
        "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}},
    }
    assert container["resources"]["limits"] == {"cpu": "500m", "memory": "256Mi"}
    assert container["readinessProbe"] == {"httpGet": {"path": "/ready", "port": "http"}}
    assert container["command"] == ["serve"]
    assert template["metadata"]["labels"]["team"] == "a"
    assert template["metadata"]["labels"]["app.kubernetes.io/name"] == "web"  # not hijacked
    assert template["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
    assert template["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    assert template["spec"]["serviceAccountName"] == "api"


@pytest.mark.parametrize(
    "spec",
    [
        {"image": ""},
        {"image": "x", "size": -1},
        {"image": "x", "ports": [{"port": 0}]},
        {"image": "x", "ports": [{"port": 80, "nodePort": 80}]},
        {"image": "x", "unknownField": 1},
    ],
)
def test_the_models_reject_what_admission_rejects(spec: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        AppServiceSpec.model_validate(spec)


def test_is_subset_ignores_server_defaults_but_not_removed_list_items() -> None:
    want = {"spec": {"ports": [{"port": 80}]}}
    assert is_subset(
        want, {"spec": {"ports": [{"port": 80, "nodePort": 31000}], "clusterIP": "10.96.0.5"}}
    )
    assert not is_subset(want, {"spec": {"ports": [{"port": 80}, {"port": 81}]}})
    assert not is_subset(want, {"spec": {"ports": [{"port": 81}]}})


def _deployment(
    replicas: int, ready: int, updated: int, available: int, *, minimum: bool = True
) -> dict[str, Any]:
    reason = "MinimumReplicasAvailable" if minimum else "MinimumReplicasUnavailable"
    status = "True" if minimum else "False"
    return {
        "metadata": {"generation": 3},
        "status": {
            "observedGeneration": 3,
            "replicas": replicas,
            "readyReplicas": ready,
            "updatedReplicas": updated,
            "availableReplicas": available,
            "conditions": [{"type": "Available", "status": status, "reason": reason}],
        },
    }


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def _status(
    app: dict[str, Any],
    deployment: dict[str, Any],
    *,
    size: int = 2,
    problem: Problem | None = None,
    now: str = "t1",
) -> dict[str, Any]:
    """from_children() for an app whose Service exists unless there is a problem."""
    return from_children(
        app,
        size=size,
        deployment=deployment,
        service_expected=True,
        service=None if problem else {},
        problem=problem,
        selector="s",
        now=now,
    ).to_dict()


def test_status_is_ready_when_every_replica_is_updated_and_available() -> None:
    status = _status(_app(SEED, generation=4), _deployment(2, 2, 2, 2))
    assert status["ready"] == "2/2"
    assert status["observedGeneration"] == 4
    assert _conditions(status) == {
        "Ready": ("True", "Ready"),
        "Available": ("True", "MinimumReplicasAvailable"),
        "Progressing": ("False", "RolloutComplete"),
        "Degraded": ("False", "AsExpected"),
    }


def test_available_is_the_deployments_own_condition() -> None:
    """``kubectl wait --for=condition=Available`` means what it means for a Deployment:
    available during a rollout that keeps the minimum, not before the Deployment says so."""
    rolling = _status(_app(SEED), _deployment(2, 1, 1, 1))
    assert _conditions(rolling)["Available"] == ("True", "MinimumReplicasAvailable")
    assert _conditions(rolling)["Ready"] == ("False", "RollingOut")
    starting = _status(_app(SEED), _deployment(2, 0, 2, 0, minimum=False))
    assert _conditions(starting)["Available"] == ("False", "MinimumReplicasUnavailable")
    new = _status(_app(SEED), {"metadata": {"generation": 1}, "status": {}})
    assert _conditions(new)["Available"][0] == "False"
    missing = from_children(
        _app(SEED),
        size=1,
        deployment=None,
        service_expected=False,
        service=None,
        problem=None,
        selector="s",
    ).to_dict()
    assert _conditions(missing)["Available"] == ("False", "DeploymentMissing")


def test_a_rollout_in_progress_and_a_problem_are_reported() -> None:
    rolling = _status(_app(SEED), _deployment(2, 1, 1, 1))
    assert _conditions(rolling)["Ready"] == ("False", "RollingOut")
    assert _conditions(rolling)["Progressing"] == ("True", "RollingOut")

    broken = _status(
        _app(SEED),
        _deployment(2, 2, 2, 2),
        problem=Problem("NodePortConflict", "port 30002 is already allocated"),
    )
    assert _conditions(broken)["Ready"] == ("False", "NodePortConflict")
    assert _conditions(broken)["Degraded"] == ("True", "NodePortConflict")


def test_last_transition_time_changes_only_when_the_status_changes() -> None:
    app = _app(SEED)
    first = _status(app, _deployment(2, 2, 2, 2), now="t1")
    app["status"] = first
    assert _status(app, _deployment(2, 2, 2, 2), now="t2") == first
    flipped = _status(app, _deployment(2, 2, 2, 2), size=3, now="t3")
    times = {c["type"]: c["lastTransitionTime"] for c in flipped["conditions"]}
    assert times == {"Ready": "t3", "Available": "t1", "Progressing": "t3", "Degraded": "t1"}


def test_the_seed_sample_runs_as_its_image_wants_unless_the_namespace_is_restricted() -> None:
    """nginx:1.7.9 starts as root and binds port 80: the default hardening (no privilege
    escalation, RuntimeDefault seccomp) lets it; a restricted namespace (or podSecurity:
    restricted) gets the restricted profile, which a root image cannot meet."""
    app = _app(SEED)
    container = desired.deployment(app, AppServiceSpec.model_validate(SEED))["spec"]["template"][
        "spec"
    ]["containers"][0]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    restricted = desired.deployment(app, AppServiceSpec.model_validate(SEED), "restricted")
    security = restricted["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    asked = AppServiceSpec.model_validate({**SEED, "podSecurity": "restricted"})
    security = desired.deployment(app, asked)["spec"]["template"]["spec"]["containers"][0][
        "securityContext"
    ]
    assert security["runAsNonRoot"] is True
    # ... and an object may keep baseline even where the namespace would make it restricted
    kept = AppServiceSpec.model_validate({**SEED, "podSecurity": "baseline"})
    security = desired.deployment(app, kept, "restricted")["spec"]["template"]["spec"][
        "containers"
    ][0]["securityContext"]
    assert "runAsNonRoot" not in security


WORKLOAD = {
    "image": "registry.example.com/team/app:1.0",
    "command": ["/app/server"],
    "args": ["--config", "/etc/app/app.yaml"],
    "imagePullSecrets": [{"name": "regcred"}],
    "volumes": [
        {"name": "config", "configMap": {"name": "app-config"}},
        {"name": "tls", "secret": {"secretName": "app-tls", "defaultMode": 0o400}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "app-data"}},
        {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
    ],
    "volumeMounts": [
        {"name": "config", "mountPath": "/etc/app", "readOnly": True},
        {"name": "tls", "mountPath": "/etc/tls", "readOnly": True},
        {"name": "data", "mountPath": "/var/lib/app"},
        {"name": "scratch", "mountPath": "/scratch"},
    ],
    "nodeSelector": {"disktype": "ssd"},
    "tolerations": [
        {"key": "dedicated", "operator": "Equal", "value": "app", "effect": "NoSchedule"}
    ],
    "affinity": {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    },
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
        }
    ],
}


def test_volumes_command_and_scheduling_reach_the_pod_template_as_written() -> None:
    deployment = desired.deployment(_app(WORKLOAD), AppServiceSpec.model_validate(WORKLOAD))
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == WORKLOAD["command"]
    assert container["args"] == WORKLOAD["args"]
    assert container["volumeMounts"] == WORKLOAD["volumeMounts"]
    for field in (
        "imagePullSecrets",
        "volumes",
        "nodeSelector",
        "tolerations",
        "affinity",
        "topologySpreadConstraints",
    ):
        assert pod[field] == WORKLOAD[field], field


def test_without_the_fields_the_pod_template_is_as_before() -> None:
    deployment = desired.deployment(_app(SEED), AppServiceSpec.model_validate(SEED))
    pod = deployment["spec"]["template"]["spec"]
    assert set(pod) == {"containers"}
    assert "volumeMounts" not in pod["containers"][0]

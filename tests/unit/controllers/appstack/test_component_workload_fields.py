"""An AppStack component's fields for real workloads (controllers/appstack/desired.py): its
own command, pull Secrets, volumes beside its configs, scheduling — and a ConfigMap or Secret
it mounts rolling it, as the ConfigMaps of configs and the Secrets of env do."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appstack import AppStack
from appstack.controllers.appstack import desired
from appstack.controllers.appstack.references import referenced

OWNER = {
    "apiVersion": "appstack.dev/v1",
    "kind": "AppStack",
    "metadata": {"name": "ds", "namespace": "n", "uid": "u"},
}
VOLUMES = [
    {"name": "settings", "configMap": {"name": "app-settings"}},
    {"name": "tls", "secret": {"secretName": "app-tls"}},
    {"name": "data", "persistentVolumeClaim": {"claimName": "app-data"}},
    {"name": "scratch", "emptyDir": {}},
]
MOUNTS = [
    {"name": "settings", "mountPath": "/etc/app", "readOnly": True},
    {"name": "tls", "mountPath": "/etc/tls", "readOnly": True},
    {"name": "data", "mountPath": "/var/lib/app"},
    {"name": "scratch", "mountPath": "/scratch"},
]
SCHEDULING = {
    "nodeSelector": {"type": "real"},
    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "type", "operator": "In", "values": ["real"]}]}
                ]
            }
        }
    },
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"appstack.dev/member": "api"}},
        }
    ],
}


def _component(**fields: Any) -> Any:
    """The component of a whole AppStack, validated as admission validates it (CEL too)."""
    component = {"name": "api", "image": "busybox:1.36", **fields}
    stack = {"metadata": {"name": "ds"}, "spec": {"components": [component]}}
    return AppStack.model_validate(stack).spec.components[0]


def _pod(component: Any, **kwargs: Any) -> dict[str, Any]:
    deployment = desired.deployment(OWNER, component, {}, **kwargs)
    return dict(deployment["spec"]["template"])


def test_command_pull_secrets_volumes_and_scheduling_reach_the_pod_template() -> None:
    c = _component(
        command=["sh", "-c"],
        args=["cat /etc/app/x && sleep 3600"],
        imagePullSecrets=[{"name": "regcred"}],
        volumes=VOLUMES,
        volumeMounts=MOUNTS,
        **SCHEDULING,
    )
    spec = _pod(c)["spec"]
    (main,) = spec["containers"]
    assert (main["command"], main["args"]) == (["sh", "-c"], ["cat /etc/app/x && sleep 3600"])
    assert main["volumeMounts"] == MOUNTS
    assert spec["volumes"] == VOLUMES
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    for field, value in SCHEDULING.items():
        assert spec[field] == value, field


def test_own_volumes_come_after_those_of_configs() -> None:
    c = _component(
        configs=[{"name": "api", "mountPath": "/etc/api", "files": {"a": "1"}}],
        volumes=VOLUMES[:1],
        volumeMounts=MOUNTS[:1],
    )
    spec = _pod(c)["spec"]
    assert [v["name"] for v in spec["volumes"]] == ["api", "settings"]
    assert [m["mountPath"] for m in spec["containers"][0]["volumeMounts"]] == [
        "/etc/api",
        "/etc/app",
    ]
    short = _component(
        config={"mountPath": "/etc/api", "files": {"a": "1"}},
        volumes=VOLUMES[:1],
        volumeMounts=MOUNTS[:1],
    )
    assert [v["name"] for v in _pod(short)["spec"]["volumes"]] == ["config", "settings"]


def test_a_mounted_config_map_or_secret_rolls_the_component_when_it_changes() -> None:
    c = _component(volumes=VOLUMES, volumeMounts=MOUNTS)
    assert desired.used_config_maps(c) == ["app-settings"]
    assert desired.used_secrets(c, {}, "ds") == ["app-tls"]

    def hashes(version: str | None, secrets: str | None = None) -> dict[str, str]:
        meta = _pod(c, secrets_hash=secrets, config_maps_version=version)["metadata"]
        return dict(meta.get("annotations", {}))

    assert hashes("v1")["appstack.dev/config-hash"] != hashes("v2")["appstack.dev/config-hash"]
    assert hashes("v1", "s1")["appstack.dev/secrets-hash"] == "s1"
    assert hashes(None) == {}  # render: nothing read, nothing on the template
    stack = {
        "metadata": {"name": "ds", "namespace": "n"},
        "spec": {"components": [{"name": "api", "image": "x", "volumes": VOLUMES}]},
    }
    assert referenced(stack) == ["ConfigMap/n/app-settings", "Secret/n/app-tls"]


def test_the_short_config_form_with_a_mounted_config_map_hashes_both() -> None:
    files = {"a": "1"}
    plain = _component(config={"mountPath": "/etc/api", "files": files})
    mounted = _component(
        config={"mountPath": "/etc/api", "files": files}, volumes=VOLUMES[:1], volumeMounts=[]
    )

    def digest(c: Any, version: str | None) -> str:
        return str(
            _pod(c, config_maps_version=version)["metadata"]["annotations"][
                "appstack.dev/config-hash"
            ]
        )

    assert digest(plain, None) == digest(mounted, None)  # unchanged when nothing is mounted
    assert digest(mounted, "v1") != digest(mounted, "v2")


def test_without_the_fields_the_template_is_as_before() -> None:
    template = _pod(_component())
    assert set(template["spec"]) == {"containers"}
    assert "annotations" not in template["metadata"]
    assert set(template["spec"]["containers"][0]) == {"name", "image", "securityContext"}


@pytest.mark.parametrize(
    ("fields", "says", "field"),
    [
        (
            {"volumeMounts": [{"name": "x", "mountPath": "/x"}]},
            "every volumeMount must name a volume of volumes",
            ("volumeMounts",),
        ),
        (
            {
                "configs": [{"name": "api", "mountPath": "/etc/api", "files": {}}],
                "volumes": [{"name": "api", "emptyDir": {}}],
            },
            "volumes: a volume may not have the name of a config",
            ("volumes",),
        ),
        (
            {
                "config": {"mountPath": "/etc/api", "files": {}},
                "volumes": [{"name": "config", "emptyDir": {}}],
            },
            "volumes: a volume may not have the name of a config",
            ("volumes",),
        ),
        (
            {
                "config": {"mountPath": "/etc/api", "files": {}},
                "volumes": VOLUMES[:1],
                "volumeMounts": [{"name": "settings", "mountPath": "/etc/api"}],
            },
            "a mount path may not be one of config or configs",
            ("volumeMounts",),
        ),
        (
            {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]},
            "Extra inputs are not permitted",
            ("volumes", 0, "hostPath"),
        ),
        ({"nodeSelector": {"bad key": "x"}}, "'bad key' is not a label key", ("nodeSelector",)),
    ],
)
def test_bad_volumes_are_refused_naming_the_component_and_field(
    fields: dict[str, Any], says: str, field: tuple[str | int, ...]
) -> None:
    with pytest.raises(ValidationError) as caught:
        _component(**fields)
    (error,) = caught.value.errors()
    assert says in error["msg"]
    assert error["loc"] == ("spec", "components", 0, *field)

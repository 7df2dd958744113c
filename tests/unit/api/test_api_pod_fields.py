"""The pod fields AppService and AppStack components share (the SDK's models): the four
volume sources and nothing else, mounts that name volumes, scheduling in Kubernetes' shapes,
and the checks a whole object's validation makes: admission's CEL rules (evaluated
client-side) and what only the models check (nodeSelector keys)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appservice import AppService, AppServiceSpec
from appstack.api.appstack import AppStack
from appstack.manifests.crds import all_crds
from appstack.sdk import Affinity, Toleration, Volume, VolumeMount

Loc = tuple[str | int, ...]


def _spec(**fields: Any) -> AppServiceSpec:
    """The spec of a whole AppService, validated as admission validates it (CEL rules too)."""
    obj = {"metadata": {"name": "web"}, "spec": {"image": "busybox:1.36", **fields}}
    return AppService.model_validate(obj).spec


def _refused(says: str, **fields: Any) -> list[Loc]:
    """The fields an AppService with ``fields`` is refused at; the refusal says ``says``."""
    with pytest.raises(ValidationError, match=says) as caught:
        _spec(**fields)
    return [error["loc"] for error in caught.value.errors()]


@pytest.mark.parametrize(
    "volume",
    [
        {"name": "a", "configMap": {"name": "settings", "items": [{"key": "k", "path": "x/k"}]}},
        {"name": "a", "secret": {"secretName": "creds", "defaultMode": 0o400}},
        {"name": "a", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
        {"name": "a", "emptyDir": {}},
        {"name": "a", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
    ],
)
def test_the_four_volume_sources_are_accepted_as_kubernetes_writes_them(
    volume: dict[str, Any],
) -> None:
    assert Volume.model_validate(volume).to_dict() == volume


_ITEM_PATH = ("configMap", "items", 0, "path")


@pytest.mark.parametrize(
    ("volume", "says", "field"),
    [
        ({"name": "a", "hostPath": {"path": "/"}}, "Extra inputs", ("hostPath",)),
        ({"name": "a", "hostPath": {"path": "/"}, "emptyDir": {}}, "Extra inputs", ("hostPath",)),
        ({"name": "a", "nfs": {"server": "x", "path": "/"}}, "Extra inputs", ("nfs",)),
        ({"name": "a"}, "exactly one of configMap, secret, persistentVolumeClaim, emptyDir", ()),
        ({"name": "a", "emptyDir": {}, "secret": {"secretName": "s"}}, "exactly one of", ()),
        ({"name": "A_b", "emptyDir": {}}, "pattern", ("name",)),
        (
            {"name": "a", "configMap": {"name": "c", "items": [{"key": "k", "path": "../x"}]}},
            "pattern",
            _ITEM_PATH,
        ),
        (
            {"name": "a", "configMap": {"name": "c", "items": [{"key": "k", "path": "/x"}]}},
            "pattern",
            _ITEM_PATH,
        ),
    ],
)
def test_other_volume_sources_cannot_be_written(
    volume: dict[str, Any], says: str, field: Loc
) -> None:
    assert _refused(says, volumes=[volume]) == [("spec", "volumes", 0, *field)]


def test_no_crd_has_a_field_for_a_host_path_or_host_namespaces() -> None:
    text = str(all_crds())
    for field in ("hostPath", "hostNetwork", "hostPID", "hostIPC", "hostPort", "nodeName"):
        assert f"'{field}'" not in text, field


@pytest.mark.parametrize(
    ("mount", "says"),
    [
        ({"name": "a", "mountPath": "etc/app"}, "mountPath"),
        ({"name": "a", "mountPath": "/etc/app", "subPath": "../x"}, "subPath"),
        ({"name": "a", "mountPath": "/etc/app", "subPath": "/x"}, "subPath"),
        ({"name": "a", "mountPath": "/etc/app", "subPath": "x/../y"}, "subPath"),
    ],
)
def test_mount_paths_are_absolute_and_sub_paths_stay_inside(
    mount: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValidationError, match=says):
        VolumeMount.model_validate(mount)
    VolumeMount.model_validate({"name": "a", "mountPath": "/etc/app", "subPath": "..x/.env"})


CM = {"name": "a", "configMap": {"name": "settings"}}


@pytest.mark.parametrize(
    ("fields", "says", "field"),
    [
        (
            {"volumes": [CM, {"name": "a", "emptyDir": {}}]},
            "volume names must be unique",
            "volumes",
        ),
        (
            {"volumeMounts": [{"name": "a", "mountPath": "/x"}]},
            "every volumeMount must name a volume of volumes",
            "volumeMounts",
        ),
        (
            {
                "volumes": [CM],
                "volumeMounts": [
                    {"name": "a", "mountPath": "/x"},
                    {"name": "a", "mountPath": "/x"},
                ],
            },
            "volumeMounts: mount paths must be unique",
            "volumeMounts",
        ),
    ],
)
def test_mounts_are_refused_field_by_field(fields: dict[str, Any], says: str, field: str) -> None:
    assert _refused(says, **fields) == [("spec", field)]


def test_names_and_paths_of_configs_are_taken() -> None:
    """An AppStack component's configs are volumes and mounts too (mount_rules' other names
    and paths): its own volumes and mounts may not take their names or paths."""

    def stack(configs: dict[str, Any], volume: str, path: str) -> dict[str, Any]:
        mount = {"name": volume, "mountPath": path}
        component = {"name": "a", "image": "x", **configs}
        component |= {"volumes": [{**CM, "name": volume}], "volumeMounts": [mount]}
        return {"metadata": {"name": "s"}, "spec": {"components": [component]}}

    def refused(obj: dict[str, Any]) -> list[tuple[Loc, str]]:
        with pytest.raises(ValidationError) as caught:
            AppStack.model_validate(obj)
        return [(e["loc"], e["msg"]) for e in caught.value.errors()]

    named = {"configs": [{"name": "a", "mountPath": "/etc/a", "configMap": "settings"}]}
    single = {"config": {"mountPath": "/etc/a", "files": {"k": "v"}}}
    component = ("spec", "components", 0)
    volumes = "volumes: a volume may not have the name of a config (config, configs[].name)"
    assert refused(stack(named, "a", "/etc/app")) == [((*component, "volumes"), volumes)]
    assert refused(stack(single, "config", "/etc/app")) == [((*component, "volumes"), volumes)]
    paths = "volumeMounts: a mount path may not be one of config or configs"
    assert refused(stack(named, "b", "/etc/a")) == [((*component, "volumeMounts"), paths)]
    assert refused(stack(single, "b", "/etc/a")) == [((*component, "volumeMounts"), paths)]
    AppStack.model_validate(stack(named, "b", "/etc/app"))
    AppStack.model_validate(stack(single, "b", "/etc/app"))


@pytest.mark.parametrize(
    "key",
    ["disktype", "kubernetes.io/hostname", "node.example.com/pool", "A_b.c-D", "x" * 63],
)
def test_node_selector_keys_are_label_keys(key: str) -> None:
    assert _spec(nodeSelector={key: "v"}).node_selector == {key: "v"}


@pytest.mark.parametrize(
    ("selector", "says"),
    [
        ({"disk type": "ssd"}, "'disk type' is not a label key"),
        ({"a/b/c": "ssd"}, "is not a label key"),
        ({"-a": "ssd"}, "is not a label key"),
        ({"x" * 64: "ssd"}, "is not a label key"),
        ({"Example.com/a": "ssd"}, "is not a label key"),
        ({f"{'a' * 254}/b": "ssd"}, "is not a label key"),
        ({"disktype": "s s"}, "nodeSelector"),
        ({"disktype": "x" * 64}, "nodeSelector"),
    ],
)
def test_node_selectors_that_match_no_node_label_are_refused(
    selector: dict[str, str], says: str
) -> None:
    with pytest.raises(ValidationError, match=says):
        _spec(nodeSelector=selector)


@pytest.mark.parametrize(
    ("toleration", "says", "field"),
    [
        ({"effect": "NoSchedule"}, "operator must be Exists when key is empty", "operator"),
        ({"key": "k", "operator": "Exists", "value": "v"}, "value must be empty", "value"),
        (
            {"key": "k", "tolerationSeconds": 5},
            "tolerationSeconds needs effect NoExecute",
            "tolerationSeconds",
        ),
        ({"key": "k", "operator": "Above"}, "Input should be 'Exists' or 'Equal'", "operator"),
        ({"key": "k", "effect": "Sometimes"}, "Input should be 'NoSchedule'", "effect"),
    ],
)
def test_tolerations_follow_kubernetes_rules(
    toleration: dict[str, Any], says: str, field: str
) -> None:
    assert _refused(says, tolerations=[toleration]) == [("spec", "tolerations", 0, field)]
    assert Toleration.model_validate({"operator": "Exists"}).to_dict() == {"operator": "Exists"}
    assert _spec(tolerations=[{"operator": "Exists"}]).tolerations


AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "type", "operator": "In", "values": ["real"]}]}
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
            }
        ],
    },
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "web"}},
                    "topologyKey": "kubernetes.io/hostname",
                },
            }
        ]
    },
}


def test_affinity_is_kubernetes_own_shape() -> None:
    assert Affinity.model_validate(AFFINITY).to_dict() == AFFINITY
    with pytest.raises(ValidationError, match="operator"):
        Affinity.model_validate(
            {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "topologyKey": "zone",
                            "labelSelector": {
                                "matchExpressions": [
                                    {"key": "a", "operator": "Gt", "values": ["1"]}
                                ]
                            },
                        }
                    ]
                }
            }
        )
    with pytest.raises(ValidationError, match="weight"):
        Affinity.model_validate(
            {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 0, "preference": {}}
                    ]
                }
            }
        )


def test_topology_spread_constraints_need_a_key_and_a_skew() -> None:
    spread = {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway",
        "matchLabelKeys": ["pod-template-hash"],
    }
    assert _spec(topologySpreadConstraints=[spread]).to_dict()["topologySpreadConstraints"] == [
        spread
    ]
    with pytest.raises(ValidationError, match="maxSkew"):
        _spec(topologySpreadConstraints=[{**spread, "maxSkew": 0}])
    with pytest.raises(ValidationError, match="whenUnsatisfiable"):
        _spec(topologySpreadConstraints=[{**spread, "whenUnsatisfiable": "Never"}])

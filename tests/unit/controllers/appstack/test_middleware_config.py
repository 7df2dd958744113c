"""Managed mysql's own configuration (``managed.configFiles``, seed 003's
``mysql-dataservice`` ConfigMap): a ConfigMap mounted where mysqld reads it, a digest on the
pod template so a change restarts it; other engines and file names refused (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appstack import AppStack, AppStackSpec
from appstack.controllers.appstack import desired

OWNER = {
    "apiVersion": "appstack.dev/v1",
    "kind": "AppStack",
    "metadata": {"name": "ds", "namespace": "ns", "uid": "u-1"},
}
CNF = "[mysqld]\nmax_connections = 500\ncharacter-set-server = utf8mb4\n"


def _spec(engine: str = "mysql", **managed: Any) -> AppStackSpec:
    """The spec of a whole AppStack, validated as admission validates it (CEL rules too)."""
    spec = {
        "middleware": [{"name": "mysql", "type": engine, "managed": managed}],
        "components": [{"name": "api", "image": "api:1", "uses": ["mysql"]}],
    }
    return AppStack.model_validate({"metadata": {"name": "ds"}, "spec": spec}).spec


def _objects(spec: AppStackSpec) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in desired.children(OWNER, spec)}


def test_mysql_reads_its_config_files_from_conf_d_and_restarts_when_they_change() -> None:
    objects = _objects(_spec(configFiles={"dataservice.cnf": CNF}))
    config = objects[("ConfigMap", "ds-mysql-config")]
    assert config["data"] == {"dataservice.cnf": CNF}
    assert config["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    template = objects[("StatefulSet", "ds-mysql")]["spec"]["template"]
    (mysqld,) = template["spec"]["containers"]
    assert {"name": "config", "mountPath": "/etc/mysql/conf.d", "readOnly": True} in mysqld[
        "volumeMounts"
    ]
    assert {"name": "config", "configMap": {"name": "ds-mysql-config"}} in template["spec"][
        "volumes"
    ]
    digest = template["metadata"]["annotations"]["appstack.dev/config-hash"]

    changed = _objects(_spec(configFiles={"dataservice.cnf": CNF + "max_allowed_packet = 64M\n"}))
    template = changed[("StatefulSet", "ds-mysql")]["spec"]["template"]
    assert template["metadata"]["annotations"]["appstack.dev/config-hash"] != digest


def test_without_config_files_there_is_no_config_map_or_mount() -> None:
    objects = _objects(_spec())
    assert ("ConfigMap", "ds-mysql-config") not in objects
    template = objects[("StatefulSet", "ds-mysql")]["spec"]["template"]
    assert "annotations" not in template["metadata"]
    assert "volumes" not in template["spec"]


@pytest.mark.parametrize(
    ("engine", "files"),
    [
        ("postgres", {"custom.conf": "x"}),
        ("redis", {"redis.conf": "x"}),
        ("mysql", {"my.conf": "x"}),
    ],
)
def test_other_engines_and_file_names_are_refused(engine: str, files: dict[str, str]) -> None:
    with pytest.raises(ValidationError) as caught:
        _spec(engine, configFiles=files)
    (error,) = caught.value.errors()
    assert error["msg"].startswith("managed.configFiles: mysql only")
    assert error["loc"] == ("spec", "middleware", 0, "managed", "configFiles")

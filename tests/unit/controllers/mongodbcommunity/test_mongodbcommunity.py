"""MongoDBCommunity's pure pieces: the seed sample validates as written (our apiVersion), what
is not served is refused with the field named, the version picks the image's shell, and the
children — StatefulSet on the shared replica set, headless Service, the bootstrap's
ConfigMap with the users, the budget — plus each user's connection-string Secret and the
status, as the reconciler applies them."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError

from appstack.api.mongodbcommunity import MongoDBCommunity, MongoDBCommunitySpec, User
from appstack.api.seeds import foreign_problem
from appstack.cli import main
from appstack.controllers.mongodb_replicaset import bootstrap as boot
from appstack.controllers.mongodbcommunity import desired, status, users
from appstack.controllers.registry import ALL
from appstack.sdk.kit.conditions import Problem, error_message, field_path
from tests.support.paths import REPO_ROOT as ROOT

EXAMPLE = ROOT / "examples/mongodbcommunity.yaml"


def _sample() -> dict[str, Any]:
    _, mdbc = yaml.safe_load_all(EXAMPLE.read_text())
    return dict(mdbc)


def _obj(spec: MongoDBCommunitySpec) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "MongoDBCommunity",
        "metadata": {"name": "example-mongodb", "namespace": "ns", "uid": "u-1", "generation": 2},
        "spec": spec.to_dict(),
    }


def _spec(**change: Any) -> MongoDBCommunitySpec:
    """The spec of the whole sample with ``change``, validated as admission validates it
    (its CEL rules too)."""
    sample = _sample()
    return MongoDBCommunity.model_validate({**sample, "spec": {**sample["spec"], **change}}).spec


def test_the_seed_sample_is_valid_with_our_api_version_and_its_own_is_explained() -> None:
    parsed = MongoDBCommunity.model_validate(_sample())
    assert parsed.spec.users[0].password_secret_ref.key == "password"  # the default key
    seed = {**_sample(), "apiVersion": "mongodbcommunity.mongodb.com/v1"}
    problem = foreign_problem(seed, {c.kind.kind for c in ALL})
    assert problem == (
        "MongoDBCommunity is served as appstack.dev/v1; change apiVersion "
        "(was mongodbcommunity.mongodb.com/v1)"
    )
    result = CliRunner().invoke(main, ["render", "-f", "-"], input=yaml.safe_dump(seed))
    assert result.exit_code == 1
    assert "MongoDBCommunity is served as appstack.dev/v1" in result.output


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"type": "ShardedCluster"}, "spec.type: Input should be 'ReplicaSet'"),
        ({"version": "4.0.18"}, "spec.version: version must be a MongoDB release from 4.2"),
        ({"version": "9.0.0"}, "spec.version: version must be a MongoDB release from 4.2"),
        ({"members": 0}, "spec.members: Input should be greater than or equal to 1"),
        (
            {"users": [{"name": "a", "passwordSecretRef": {"name": "s"}, "roles": []}]},
            "spec.users[0].roles: List should have at least 1 item",
        ),
        (
            {
                "users": [
                    {
                        "name": "appstack-admin",
                        "passwordSecretRef": {"name": "s"},
                        "roles": [{"name": "root", "db": "admin"}],
                    }
                ]
            },
            "spec.users[0].name: appstack-admin in admin is the members' bootstrap administrator",
        ),
    ],
)
def test_what_is_not_served_is_refused_with_the_field_named(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        _spec(**change)
    # Each error as ``appstack render`` names it: the field's path, then the message.
    said = [f"{field_path(e['loc'])}: {error_message(e)}" for e in caught.value.errors()]
    assert any(m.startswith(message) for m in said), said


@pytest.mark.parametrize(
    ("version", "shell"),
    [("4.2.6", "mongo"), ("4.4.29", "mongo"), ("5.0.0", "mongosh"), ("8.0.4", "mongosh")],
)
def test_the_version_picks_the_shell_its_image_has(version: str, shell: str) -> None:
    assert boot.shell_for(version) == shell
    sts = desired.stateful_set(_obj(_spec(version=version)), _spec(version=version))
    mongod, sidecar = sts["spec"]["template"]["spec"]["containers"]
    assert mongod["image"] == f"mongo:{version}"
    assert mongod["readinessProbe"]["exec"]["command"][0] == shell
    assert sidecar["command"][-1].count(f"{shell} --nodb --quiet --norc") == 1


def test_the_stateful_set_mounts_each_users_secret_never_its_value() -> None:
    spec = _spec()
    sts = desired.stateful_set(_obj(spec), spec)
    assert sts["metadata"]["name"] == "example-mongodb"
    assert sts["spec"]["serviceName"] == "example-mongodb-svc"
    assert sts["spec"]["replicas"] == 3
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] == "Delete"
    pod = sts["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["user-0"]["secret"] == {
        "secretName": "my-user-password",
        "items": [{"key": "password", "path": "password"}],
        "optional": True,
        "defaultMode": 0o440,
    }
    assert volumes["admin"]["secret"]["secretName"] == "example-mongodb-admin"
    assert volumes["keyfile-secret"]["secret"]["secretName"] == "example-mongodb-keyfile"
    mongod, sidecar = pod["containers"]
    assert mongod["command"][:3] == ["mongod", "--replSet", "example-mongodb"]
    mounts = {m["mountPath"] for m in sidecar["volumeMounts"]}
    assert mounts == {"/replicaset", "/admin", "/podinfo", "/users/0"}
    assert all("valueFrom" not in e for e in sidecar["env"])  # files only, no secret env
    claim = sts["spec"]["volumeClaimTemplates"][0]["spec"]
    assert claim["resources"]["requests"]["storage"] == "10Gi"


def test_children_the_headless_service_the_bootstrap_config_and_the_budget() -> None:
    spec = _spec()
    kinds = [c["kind"] for c in desired.children(_obj(spec), spec)]
    assert kinds == ["Service", "ConfigMap", "PodDisruptionBudget", "StatefulSet"]
    one = _spec(members=1)
    assert "PodDisruptionBudget" not in [c["kind"] for c in desired.children(_obj(one), one)]
    cm = desired.config_map(_obj(spec), spec)
    document = json.loads(cm["data"][boot.CONFIG_KEY])
    assert document["_id"] == "example-mongodb"
    assert document["hostSuffix"] == ".example-mongodb-svc.ns.svc:27017"
    assert [m["host"] for m in document["members"]] == [
        f"example-mongodb-{i}.example-mongodb-svc.ns.svc:27017" for i in range(3)
    ]
    assert document["users"] == [
        {
            "name": "my-user",
            "db": "admin",
            "roles": [
                {"role": "clusterAdmin", "db": "admin"},
                {"role": "userAdminAnyDatabase", "db": "admin"},
            ],
        }
    ]
    assert "planUsers" in cm["data"][boot.SCRIPT_KEY]
    svc = desired.service(_obj(spec))
    assert (svc["metadata"]["name"], svc["spec"]["clusterIP"]) == ("example-mongodb-svc", "None")
    assert svc["spec"]["publishNotReadyAddresses"] is True


def test_the_generated_secrets_are_owned_and_random() -> None:
    spec = _spec()
    first, second = desired.generated_secrets(_obj(spec)), desired.generated_secrets(_obj(spec))
    assert [s["metadata"]["name"] for s in first] == [
        "example-mongodb-keyfile",
        "example-mongodb-admin",
    ]
    assert first[1]["stringData"]["username"] == "appstack-admin"
    assert first[1]["stringData"]["password"] != second[1]["stringData"]["password"]
    assert first[0]["metadata"]["ownerReferences"][0]["uid"] == "u-1"


def test_the_connection_secret_escapes_the_password_and_lists_every_member() -> None:
    spec = _spec()
    user = User.model_validate(
        {
            "name": "My_User",
            "db": "shop",
            "passwordSecretRef": {"name": "p"},
            "roles": [{"name": "readWrite", "db": "shop"}],
        }
    )
    secret = users.connection_secret(_obj(spec), 3, user, "p@ss:w/rd")
    assert secret["metadata"]["name"] == "example-mongodb-shop-my-user"
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    hosts = ",".join(f"example-mongodb-{i}.example-mongodb-svc.ns.svc:27017" for i in range(3))
    assert data == {
        "connectionString.standard": f"mongodb://My_User:p%40ss%3Aw%2Frd@{hosts}/shop"
        "?replicaSet=example-mongodb&ssl=false",
        "connectionString.standardSrv": "mongodb+srv://My_User:p%40ss%3Aw%2Frd@"
        "example-mongodb-svc.ns.svc/shop?replicaSet=example-mongodb&ssl=false",
        "username": "My_User",
        "password": "p@ss:w/rd",
    }
    assert users.mongo_uri(_obj(spec), 3) == f"mongodb://{hosts}/?replicaSet=example-mongodb"


def _sts(ready: int, replicas: int) -> dict[str, Any]:
    return {
        "metadata": {"generation": 1},
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": 1,
            "replicas": replicas,
            "readyReplicas": ready,
            "currentRevision": "a",
            "updateRevision": "a",
        },
    }


def test_status_phase_members_and_scale_fields() -> None:
    obj = _obj(_spec())
    running = status.observed(obj, _sts(3, 3), None, "t").to_dict()
    assert (running["phase"], running["members"], running["replicas"]) == ("Running", 3, 3)
    assert running["selector"] == (
        "app.kubernetes.io/component=mongodb,app.kubernetes.io/instance=example-mongodb,"
        "app.kubernetes.io/name=example-mongodb"
    )
    assert running["observedGeneration"] == 2
    assert status.observed(obj, _sts(1, 3), None, "t").to_dict()["phase"] == "Pending"
    missing = Problem("PasswordSecretNotFound", "Secret my-user-password not found")
    failed = status.observed(obj, _sts(3, 3), missing, "t").to_dict()
    assert failed["phase"] == "Failed"
    (ready,) = failed["conditions"]
    assert (ready["status"], ready["reason"]) == ("False", "PasswordSecretNotFound")


def test_member_claims_are_named_as_the_community_operator_names_them() -> None:
    spec = _spec()
    made = desired.stateful_set(_obj(spec), spec)
    (template,) = made["spec"]["volumeClaimTemplates"]
    # claims data-volume-<name>-<n>: seed 004's pre-created PVCs are the ones used
    assert template["metadata"]["name"] == "data-volume"
    mongod = made["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "data-volume", "mountPath": desired.DATA_PATH} in mongod["volumeMounts"]
    # an existing StatefulSet keeps its template (immutable): an earlier appstack's "data"
    assert desired.claim_of(None) == "data-volume"
    assert desired.claim_of(made) == "data-volume"
    legacy = {"spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"}}]}}
    assert desired.claim_of(legacy) == "data"
    kept = desired.stateful_set(_obj(spec), spec, desired.claim_of(legacy))
    assert kept["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    names = [m["name"] for m in kept["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]]
    assert "data" in names

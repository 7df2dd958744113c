"""The test bed's S3 server: its build, its image and its objects (pure; the real thing is
tests/e2e/test_testbed_objectstore.py)."""

from __future__ import annotations

from botocore.exceptions import ClientError

from appstack_testbed import objectstore, versitygw
from appstack_testbed.build import installed_binaries
from appstack_testbed.images.build import repository_path
from appstack_testbed.images.catalog import standard
from appstack_testbed.images.catalog import versitygw as versitygw_image


def test_the_gateway_is_built_from_its_command_package_into_a_cache_of_its_own() -> None:
    component = versitygw.component("v1.8.0")
    assert component.packages == ("github.com/versity/versitygw/cmd/versitygw",)
    assert installed_binaries(component) == [versitygw.BINARY]
    assert "-X main.Version=v1.8.0" in component.ldflags
    assert versitygw.VersityBuild("v1.8.0").key == "versitygw-v1.8.0"


def test_its_image_is_pushed_on_demand_only_under_the_name_the_objects_use() -> None:
    image = versitygw_image()
    assert image.name not in {i.name for i in standard()}  # `make demo` does not build it
    assert ":".join(repository_path(objectstore.IMAGE)) in image.refs
    assert "versity/versitygw:latest" in image.refs
    assert image.config.entrypoint == ("/usr/local/bin/versitygw",)
    assert image.config.user == "65532:65532"


def test_the_keys_are_in_a_secret_and_the_backend_is_posix_on_an_empty_dir() -> None:
    objects = objectstore.manifests(
        "ns", access_key="AKEXAMPLE", secret_key="s3cr3t", region="eu-west-1", name="store"
    )
    assert [o["kind"] for o in objects] == ["Secret", "Deployment", "Service"]
    secret, deployment, service = objects
    assert secret["stringData"] == {"access-key": "AKEXAMPLE", "secret-key": "s3cr3t"}
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "s3cr3t" not in str(container["args"])
    assert container["args"][-2:] == ["posix", objectstore.DATA_DIR]
    assert "--region=eu-west-1" in container["args"]
    assert {v["name"]: v.get("emptyDir") for v in pod["volumes"]} == {"data": {}, "iam": {}}
    assert container["readinessProbe"]["httpGet"]["path"] == objectstore.HEALTH_PATH
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert service["spec"]["ports"][0]["port"] == objectstore.PORT
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_an_s3_error_is_its_code_and_status() -> None:
    response = {"Error": {"Code": "NoSuchBucket"}, "ResponseMetadata": {"HTTPStatusCode": 404}}
    assert objectstore.error_code(ClientError(response, "GetObject")) == ("NoSuchBucket", 404)
    assert objectstore.error_code(ValueError()) == ("", 0)

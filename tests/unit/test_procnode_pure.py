"""The process node's pure parts: argv/env expansion, image mapping, hosts files, probe
thresholds, Service endpoints, pod status bits and the mount script."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from appstack_testbed import etcd_releases
from appstack_testbed import serviceproxy as service
from appstack_testbed.procnode import network, sandbox, spec, status
from appstack_testbed.procnode.probes import Prober, resolve_port
from appstack_testbed.procnode.volumes import Mount

BIN = Path("/cache/etcd-v3.6.16/bin")


def test_expand_follows_kubernetes_rules() -> None:
    env = {"A": "1", "POD_IP": "10.200.0.2"}
    assert spec.expand("http://$(POD_IP):2379", env) == "http://10.200.0.2:2379"
    assert spec.expand("$(MISSING)-$$(A)-$(A)", env) == "$(MISSING)-$(A)-1"
    assert spec.expand("$(cat /x)", env) == "$(cat /x)"  # not a name: left for the shell


def test_argv_maps_etcd_binaries_and_leaves_others() -> None:
    container = {"command": ["/usr/local/bin/etcd"], "args": ["--name=$(N)"]}
    assert spec.argv(container, {"N": "e-0"}, BIN) == [str(BIN / "etcd"), "--name=e-0"]
    assert spec.argv({"args": ["etcd", "--x"]}, {}, BIN) == [str(BIN / "etcd"), "--x"]
    assert spec.argv({}, {}, BIN) == [str(BIN / "etcd")]
    assert spec.resolve_binary("etcdctl", BIN) == str(BIN / "etcdctl")
    assert spec.resolve_binary("/bin/sh", BIN) == "/bin/sh"


@pytest.mark.parametrize(
    ("tag", "version"),
    [("v3.6.16", "v3.6.16"), ("3.6.16", "v3.6.16"), ("3.5.35-0", "v3.5.35"), ("latest", None)],
)
def test_etcd_tags(tag: str, version: str | None) -> None:
    assert etcd_releases.normalize(tag) == version


def test_images_other_than_etcd_are_refused() -> None:
    with pytest.raises(spec.UnsupportedImage):
        spec.image_binary_dir("nginx:1.27")
    with pytest.raises(spec.UnsupportedImage):
        spec.image_binary_dir("registry.k8s.io/etcd:latest")


def test_environment_reads_downward_api_secrets_and_earlier_variables() -> None:
    pod = {
        "metadata": {"name": "e-0", "namespace": "ns", "labels": {"app": "e"}},
        "spec": {"nodeName": "appstack-proc-0"},
    }
    container: dict[str, Any] = {
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
        "env": [
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "URL", "value": "http://$(IP):2379"},
            {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        ],
    }
    data = {("secret", "s"): {"pw": "hunter2"}, ("configmap", "cm"): {"x": "1"}}
    env = spec.environment(
        container,
        spec.downward_fields(pod, "10.200.0.2", "127.0.0.1"),
        lambda kind, name, key: data.get((kind, name), {}).get(key),
        lambda kind, name: data.get((kind, name), {}),
    )
    assert env == {
        "CM_x": "1",
        "IP": "10.200.0.2",
        "URL": "http://10.200.0.2:2379",
        "PW": "hunter2",
        "APP": "e",
    }
    assert status.env_references(container) == {("secret", "s"), ("configmap", "cm")}


def test_hosts_names_come_from_ready_or_published_endpoints_only() -> None:
    endpoint_slice = {
        "metadata": {"namespace": "ns", "labels": {"kubernetes.io/service-name": "e"}},
        "addressType": "IPv4",
        "endpoints": [
            {"addresses": ["10.200.0.2"], "hostname": "e-0", "conditions": {"ready": True}},
            {"addresses": ["10.200.0.3"], "hostname": "e-1", "conditions": {"ready": False}},
            {"addresses": ["10.200.0.4"], "conditions": {"ready": True}},  # no hostname
        ],
    }
    entries = network.slice_names(endpoint_slice)
    assert entries == [("10.200.0.2", ["e-0.e.ns.svc.cluster.local", "e-0.e.ns.svc", "e-0.e"])]
    text = network.hosts_file(("10.200.0.9", ["me"]), entries)
    assert text.splitlines()[2:] == [
        "10.200.0.9\tme",
        "10.200.0.2\te-0.e.ns.svc.cluster.local e-0.e.ns.svc e-0.e",
    ]


def test_hosts_file_is_rewritten_in_place(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    network.write_in_place(path, "a long first version\n")
    inode = path.stat().st_ino
    network.write_in_place(path, "short\n")
    assert path.read_text() == "short\n"
    assert path.stat().st_ino == inode


def test_address_pool_reuses_released_addresses_last() -> None:
    pool = network.AddressPool(ipaddress.IPv4Network("10.200.0.0/29"))
    assert [pool.take(u) for u in "abc"] == ["10.200.0.2", "10.200.0.3", "10.200.0.4"]
    assert pool.take("a") == "10.200.0.2"
    pool.release("a")
    assert pool.take("d") == "10.200.0.5"
    assert pool.take("e", wanted="10.200.0.2") == "10.200.0.2"


def test_prober_thresholds() -> None:
    prober = Prober({"periodSeconds": 1, "failureThreshold": 2}, initial=True)
    prober.start(now=0)
    assert prober.due(0)
    assert not prober.record(False, 0)
    assert prober.ok
    assert prober.record(False, 1)
    assert not prober.ok
    assert prober.failures == 2
    assert prober.record(True, 2)
    assert not prober.due(2.5)


def test_probe_ports_by_name() -> None:
    container = {"name": "etcd", "ports": [{"name": "client", "containerPort": 2379}]}
    assert resolve_port("client", container) == 2379
    assert resolve_port(2380, container) == 2380
    with pytest.raises(ValueError, match="no port named"):
        resolve_port("peer", container)


def test_service_targets_are_the_ready_endpoints_on_the_target_port() -> None:
    svc = {
        "metadata": {"name": "e"},
        "spec": {"ports": [{"name": "client", "port": 2379, "targetPort": "client"}]},
    }
    slices = [
        {
            "ports": [{"name": "client", "port": 12379}],
            "endpoints": [
                {"addresses": ["10.200.0.3"], "conditions": {"ready": True}},
                {"addresses": ["10.200.0.2"], "conditions": {"ready": False}},
            ],
        }
    ]
    assert service.endpoint_targets(svc, slices, 2379) == [("10.200.0.3", 12379)]
    with pytest.raises(ValueError, match="no port 80"):
        service.endpoint_targets(svc, slices, 80)


def test_restart_count_continues_after_an_agent_restart() -> None:
    pod = {"status": {"containerStatuses": [{"name": "etcd", "restartCount": 2, "state": {}}]}}
    assert status.previous_restarts(pod, "etcd") == 2
    pod["status"]["containerStatuses"][0]["state"] = {"running": {}}
    assert status.previous_restarts(pod, "etcd") == 3
    assert status.previous_restarts(pod, "other") == 0


def test_mount_script_binds_hosts_and_volumes(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("")
    script = sandbox.mount_script(hosts, [Mount(tmp_path, "/var/lib/etcd", True)], "/work dir")
    assert f"mount --bind {hosts} /etc/hosts" in script
    assert "mkdir -p /var/lib/etcd" in script
    assert "mount -o remount,bind,ro /var/lib/etcd" in script
    assert script.endswith("cd '/work dir'\nexec \"$@\"")

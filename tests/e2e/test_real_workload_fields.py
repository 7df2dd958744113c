"""The fields real workloads need (issue #38), on the test bed's real node (a real kubelet
and containerd; images from the local registry): an AppStack component started with its
own ``command``/``args``, reading a ConfigMap it mounts through ``volumes`` and
``volumeMounts`` — and rolled when that ConfigMap changes; a CronTab with ``env`` and
``resources`` whose Job's pods are admitted in a namespace whose ResourceQuota demands
requests and limits (without ``resources`` they are not). Every test's namespace is placed
on the real node (the ``real_node`` fixture).
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.appstack import APP_STACK
from appstack.controllers.crontab import CRON_TAB
from appstack.core.resource import Resource
from appstack.runtime.client import Client
from appstack.runtime.resources import CONFIG_MAP, CRON_JOB
from appstack_testbed.pytest_plugin import ClusterHandle, RealNodeHandle
from appstack_testbed.waiting import eventually, eventually_sync
from tests.e2e.conftest import RunningOperator, is_ready, until
from tests.e2e.test_real_node import kubectl, running_pods

RESOURCE_QUOTA = Resource("", "v1", "ResourceQuota", "resourcequotas")


def _settings(namespace: str, greeting: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "reader-settings", "namespace": namespace},
        "data": {"greeting": greeting},
    }


def _stack(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": "fields", "namespace": namespace},
        "spec": {
            "components": [
                {
                    "name": "reader",
                    "image": "busybox:1.36",
                    "command": ["sh", "-c"],
                    "args": ["cat /etc/app/greeting && echo && sleep 3600"],
                    "volumes": [
                        {"name": "settings", "configMap": {"name": "reader-settings"}},
                        {"name": "scratch", "emptyDir": {"sizeLimit": "16Mi"}},
                    ],
                    "volumeMounts": [
                        {"name": "settings", "mountPath": "/etc/app", "readOnly": True},
                        {"name": "scratch", "mountPath": "/scratch"},
                    ],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                }
            ]
        },
    }


async def test_a_component_runs_its_own_command_reading_a_mounted_config_map(
    client: Client,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    kube_cluster: ClusterHandle,
) -> None:
    selector = {"appstack.dev/member": "reader"}
    await client.create(CONFIG_MAP, _settings(namespace, "hello from a mounted ConfigMap"))
    await client.create(APP_STACK, _stack(namespace))
    await until(client, APP_STACK, "fields", namespace, is_ready, 120, "Ready")
    (pod,) = await running_pods(client, namespace, selector)
    assert pod["spec"]["nodeName"] == real_node.name
    (container,) = pod["spec"]["containers"]
    assert container["command"] == ["sh", "-c"]

    def logs(pod: str = "deploy/fields-reader") -> str:
        return kubectl(kube_cluster, namespace, "logs", pod)

    assert "hello from a mounted ConfigMap" in eventually_sync(
        logs,
        lambda out: "hello" in out,
        timeout=30,
        what="the command's output",
        retry_on=(RuntimeError,),
    )
    written = kubectl(
        kube_cluster,
        namespace,
        "exec",
        "deploy/fields-reader",
        "--",
        "sh",
        "-c",
        "echo ok > /scratch/x && cat /scratch/x",
    )
    assert written.strip() == "ok"  # the emptyDir is writable

    # A change of the mounted ConfigMap rolls the component: a new pod whose command prints it.
    first = pod["metadata"]["name"]
    await client.patch(
        CONFIG_MAP,
        "reader-settings",
        {"data": {"greeting": "second greeting"}},
        namespace=namespace,
    )

    async def rolled() -> str | None:
        pods = await running_pods(client, namespace, selector)
        if len(pods) == 1 and pods[0]["metadata"]["name"] != first:
            return str(pods[0]["metadata"]["name"])
        return None

    new = await eventually(
        rolled, timeout=120, what="the ConfigMap change to roll the pod", interval=1
    )
    # The new pod's log by name: deploy/fields-reader may still mean the old one, terminating
    # for its grace period (its shell, PID 1, does not stop at SIGTERM).
    assert "second greeting" in eventually_sync(
        lambda: logs(f"pod/{new}"),
        lambda out: "second greeting" in out,
        timeout=60,
        what="the new pod's output",
        retry_on=(RuntimeError,),  # its container a moment from started
    )


def _quota(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "demands-requests", "namespace": namespace},
        "spec": {
            "hard": {
                "requests.cpu": "1",
                "requests.memory": "256Mi",
                "limits.cpu": "2",
                "limits.memory": "512Mi",
            }
        },
    }


def _tab(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "CronTab",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "cronSpec": "0 0 1 1 *",  # run by hand below
            "image": "busybox:1.36",
            "command": ["sh", "-c", 'echo "$GREETING from $(hostname)"'],
            "env": [{"name": "GREETING", "value": "hello under a quota"}],
            **spec,
        },
    }


async def test_a_crontab_with_env_and_resources_is_admitted_under_a_resource_quota(
    client: Client,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    kube_cluster: ClusterHandle,
) -> None:
    await client.create(RESOURCE_QUOTA, _quota(namespace))
    resources = {
        "requests": {"cpu": "50m", "memory": "16Mi"},
        "limits": {"cpu": "100m", "memory": "32Mi"},
    }
    await client.create(CRON_TAB, _tab(namespace, "quoted", resources=resources))
    await client.create(CRON_TAB, _tab(namespace, "unquoted"))  # no resources
    for name in ("quoted", "unquoted"):
        await until(client, CRON_TAB, name, namespace, is_ready, 60, "Ready")
        await until(client, CRON_JOB, name, namespace, lambda _: True, 30, "its CronJob")

    kubectl(kube_cluster, namespace, "create", "job", "now", "--from=cronjob/quoted")
    kubectl(
        kube_cluster, namespace, "wait", "--for=condition=Complete", "job/now", "--timeout=120s"
    )
    logs = kubectl(kube_cluster, namespace, "logs", "job/now")
    assert logs.startswith("hello under a quota from now-")
    pods = kubectl(
        kube_cluster,
        namespace,
        "get",
        "pods",
        "-l",
        "job-name=now",
        "-o",
        "jsonpath={.items[0].spec.containers[0].resources}",
    )
    assert '"cpu":"50m"' in pods
    assert '"memory":"32Mi"' in pods

    # Without resources the quota refuses the Job's pods: what CronTab could not say before.
    kubectl(kube_cluster, namespace, "create", "job", "refused", "--from=cronjob/unquoted")
    events = eventually_sync(
        lambda: kubectl(
            kube_cluster,
            namespace,
            "get",
            "events",
            "--field-selector=involvedObject.name=refused",
            "-o",
            "jsonpath={.items[*].message}",
        ),
        lambda out: "failed quota" in out,
        timeout=60,
        what="the quota to refuse the Job's pod",
    )
    assert "must specify" in events

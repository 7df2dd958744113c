"""What only a real node checks, on the test bed's real node (a real kubelet, containerd,
runc, kube-proxy and CoreDNS; images from the local registry): the seed's AppService sample,
unchanged, served by real nginx containers on its NodePort through kube-proxy, rolled to a
new image and scaled; Pod Security levels met by real containers (a root image under
``restricted`` refused by the kubelet, and reported); readiness probes really run; a
ConfigMap or Secret change rolls real pods and the new content is inside them; the
DataService stack on a real MariaDB, with the credentials the operator generated, its
``conf.d`` and init scripts, answering through its web tier; a CronTab's Job running a real
container. Every test's namespace is placed on the real node (the ``real_node`` fixture).
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.appstack import APP_STACK
from appstack.controllers.crontab import CRON_TAB
from appstack.runtime.client import Client
from appstack.runtime.resources import (
    CONFIG_MAP,
    CRON_JOB,
    DEPLOYMENT,
    NAMESPACE,
    POD,
    SECRET,
)
from appstack_testbed.pytest_plugin import ClusterHandle, RealNodeHandle
from appstack_testbed.waiting import eventually, eventually_sync
from tests.e2e.conftest import RunningOperator, events_of, is_ready, until

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
APP_IMAGE = "registry.example.com/appstack/stackapp:1.0"  # the test bed's app service image


def _load(name: str, namespace: str) -> list[dict[str, Any]]:
    objects = [o for o in yaml.safe_load_all((EXAMPLES / name).read_text()) if o]
    for obj in objects:
        obj["metadata"]["namespace"] = namespace
    return objects


def http_get(url: str, timeout: float = 60.0) -> str:
    """The body once ``url`` answers 200 (kube-proxy programs a new Service within moments)."""

    def get() -> str:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - the node
            return str(response.read().decode())

    return eventually_sync(
        get,
        lambda _: True,
        timeout=timeout,
        what=f"GET {url} to answer",
        interval=0.5,
        retry_on=(urllib.error.URLError, OSError),
    )


def kubectl(cluster: ClusterHandle, namespace: str, *args: str) -> str:
    return cluster.require_local().kubectl(f"--namespace={namespace}", *args).stdout


async def running_pods(client: Client, namespace: str, selector: dict[str, str]) -> list[Any]:
    pods, _ = await client.list(POD, namespace)
    return [
        p
        for p in pods
        if selector.items() <= (p["metadata"].get("labels") or {}).items()
        and not p["metadata"].get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") == "Running"
    ]


def _condition(obj: dict[str, Any], kind: str = "Ready") -> dict[str, Any]:
    return next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {}
    )


@pytest.mark.node_ports(30002)
@pytest.mark.our_names
async def test_the_seed_sample_is_served_by_real_nginx_on_its_node_port(
    client: Client,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    kube_cluster: ClusterHandle,
) -> None:
    (sample,) = _load("appservice.yaml", namespace)  # the seed's sample, unchanged
    await client.create(APP_SERVICE, sample)
    await until(client, APP_SERVICE, "appservice-sample", namespace, is_ready, 120, "Ready")
    selector = {"app.kubernetes.io/instance": "appservice-sample"}
    pods = await running_pods(client, namespace, selector)
    assert len(pods) == 2
    assert {p["spec"]["nodeName"] for p in pods} == {real_node.name}

    page = http_get(f"http://{real_node.address}:30002/")  # through kube-proxy's NodePort
    assert "Welcome to nginx!" in page
    logs = kubectl(kube_cluster, namespace, "logs", "--prefix", "-l", "app.kubernetes.io/instance")
    assert '"GET / HTTP/1.1" 200' in logs  # nginx's own access log, from the container

    # An image change rolls real pods: new ones running the new image, the old ones gone.
    old = {p["metadata"]["name"] for p in pods}
    await client.patch(
        APP_SERVICE, "appservice-sample", {"spec": {"image": "nginx:1.27"}}, namespace=namespace
    )

    async def rolled() -> bool:
        now = await running_pods(client, namespace, selector)
        images = {c["image"] for p in now for c in p["spec"]["containers"]}
        return (
            len(now) == 2
            and images == {"nginx:1.27"}
            and not old & {p["metadata"]["name"] for p in now}
        )

    await eventually(rolled, timeout=120, what="the image change to roll real pods", interval=0.5)
    await until(client, APP_SERVICE, "appservice-sample", namespace, is_ready, 60, "Ready again")
    assert "Welcome to nginx!" in http_get(f"http://{real_node.address}:30002/")

    # kubectl scale, the seed reader's way: a third real pod.
    kubectl(kube_cluster, namespace, "scale", "appservice/appservice-sample", "--replicas=3")

    def three(app: dict[str, Any]) -> bool:
        return is_ready(app) and (app.get("status") or {}).get("readyReplicas") == 3

    await until(client, APP_SERVICE, "appservice-sample", namespace, three, 90, "3 ready")
    assert len(await running_pods(client, namespace, selector)) == 3


def _app(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": 1, **spec},
    }


async def test_pods_meet_the_namespace_s_pod_security_level_and_a_root_image_is_reported(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    """The namespace enforces restricted: the operator creates restricted pods (admitted),
    an image with its own user runs, the seed's root nginx is refused by the kubelet and
    the AppService says so with the kubelet's reason and a Warning Event."""
    await client.patch(
        NAMESPACE,
        namespace,
        {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}},
    )
    await client.create(APP_SERVICE, _app("api", namespace, image=APP_IMAGE))
    await client.create(APP_SERVICE, _app("root", namespace, image="nginx:1.7.9"))
    await until(client, APP_SERVICE, "api", namespace, is_ready, 120, "api Ready")
    deployment = await client.get(DEPLOYMENT, "api", namespace)
    security = deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}

    def refused(app: dict[str, Any]) -> bool:
        return _condition(app).get("reason") == "CreateContainerConfigError"

    app = await until(client, APP_SERVICE, "root", namespace, refused, 120, "the refusal")
    assert "runAsNonRoot" in _condition(app)["message"]
    assert "image will run as root" in _condition(app)["message"]
    await events_of(client, namespace, "CreateContainerConfigError", about="root", type_="Warning")


async def test_a_readiness_probe_really_runs(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    """A probe of a path nginx serves passes; one of a path it does not keeps the app
    Ready=False with the reason (ContainersNotReady, once the grace is over)."""
    port = [{"port": 80}]

    def probe(path: str) -> dict[str, Any]:
        return {"httpGet": {"path": path, "port": 80}, "periodSeconds": 2}

    await client.create(
        APP_SERVICE,
        _app("good", namespace, image="nginx:1.27", ports=port, readinessProbe=probe("/")),
    )
    await client.create(
        APP_SERVICE,
        _app("bad", namespace, image="nginx:1.27", ports=port, readinessProbe=probe("/missing")),
    )
    await until(client, APP_SERVICE, "good", namespace, is_ready, 120, "good Ready")

    def not_ready(app: dict[str, Any]) -> bool:
        return _condition(app).get("reason") == "ContainersNotReady"

    app = await until(client, APP_SERVICE, "bad", namespace, not_ready, 120, "the reason")
    assert _condition(app)["status"] == "False"
    assert "readiness probe" in _condition(app)["message"]
    (pod,) = await running_pods(client, namespace, {"app.kubernetes.io/instance": "bad"})
    assert pod["status"]["containerStatuses"][0]["ready"] is False


def _config_stack(namespace: str, text: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": "conf", "namespace": namespace},
        "spec": {
            "components": [
                {
                    "name": "api",
                    "image": APP_IMAGE,
                    "ports": [{"name": "http", "port": 8080}],
                    "configs": [
                        {
                            "name": "api",
                            "mountPath": "/app/config",
                            "files": {"application.yml": f"server.port: 8080\n# {text}\n"},
                        }
                    ],
                    "envs": [
                        {
                            "name": "API_TOKEN",
                            "valueFrom": {"secretKeyRef": {"name": "api-token", "key": "token"}},
                        }
                    ],
                }
            ]
        },
    }


async def test_config_and_secret_changes_roll_real_pods_with_the_new_content_inside(
    client: Client,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    kube_cluster: ClusterHandle,
) -> None:
    selector = {"appstack.dev/member": "api"}
    token = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "api-token"}}
    token["metadata"]["namespace"] = namespace
    await client.create(SECRET, {**token, "stringData": {"token": "first"}})
    await client.create(APP_STACK, _config_stack(namespace, "version one"))
    await until(client, APP_STACK, "conf", namespace, is_ready, 120, "Ready")

    def inside(*command: str, pod: str = "deploy/conf-api") -> str:
        return kubectl(kube_cluster, namespace, "exec", pod, "--", *command)

    assert "version one" in inside("cat", "/app/config/application.yml")
    assert inside("printenv", "API_TOKEN").strip() == "first"

    def names(pods: list[Any]) -> set[str]:
        return {p["metadata"]["name"] for p in pods}

    async def rolled_to(before: set[str], check: Any) -> set[str]:
        """Waits for one ready pod that is not one of `before` (new pods, not a file
        changed under a running one: the kubelet refreshes a mounted ConfigMap in a
        running pod too, sometimes within a second) with the new content inside it."""

        seen: set[str] = set()

        async def rolled() -> bool:
            pods = await running_pods(client, namespace, selector)
            ready = len(pods) == 1 and pods[0]["status"]["containerStatuses"][0]["ready"]
            seen.clear()
            seen.update(names(pods))
            return bool(ready and not seen & before and check(pods[0]["metadata"]["name"]))

        await eventually(
            rolled,
            timeout=120,
            what="a new pod with the new content",
            interval=1,
            retry_on=(RuntimeError,),  # the old pod going away under kubectl exec
        )
        return seen

    first = names(await running_pods(client, namespace, selector))
    await client.patch(
        APP_STACK,
        "conf",
        {"spec": {"components": _config_stack(namespace, "version two")["spec"]["components"]}},
        namespace=namespace,
    )
    second = await rolled_to(
        first, lambda pod: "version two" in inside("cat", "/app/config/application.yml", pod=pod)
    )

    await client.patch(
        SECRET, "api-token", {"stringData": {"token": "second"}}, namespace=namespace
    )
    await rolled_to(
        second, lambda pod: inside("printenv", "API_TOKEN", pod=pod).strip() == "second"
    )


@pytest.mark.node_ports(30160, 30161)
async def test_the_dataservice_stack_runs_on_real_mariadb_and_answers_through_its_web_tier(
    client: Client,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    kube_cluster: ClusterHandle,
) -> None:
    """examples/dataservice.yaml, unchanged: MariaDB starts with the credentials the
    operator generated, its conf.d and init scripts; auth connects with exactly the
    injected settings; a request goes web (nginx) -> proxy -> auth -> MySQL; each member
    started only once what it depends on was really ready."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "uuc-token"}}
    secret["metadata"]["namespace"] = namespace
    await client.create(SECRET, {**secret, "stringData": {"token": "t0ken"}})
    for obj in _load("dataservice.yaml", namespace):
        await client.create(CONFIG_MAP if obj["kind"] == "ConfigMap" else APP_STACK, obj)
    await until(client, APP_STACK, "dataservice", namespace, is_ready, 300, "the stack Ready")

    answer = json.loads(
        http_get(f"http://{real_node.address}:30160/api/call/dataservice-auth:9081/")
    )
    assert answer["via"].startswith("dataservice-proxy-")
    auth = answer["answer"]
    assert auth["service"].startswith("dataservice-auth-")
    mysql = auth["connections"]["mysql"]
    assert "error" not in mysql, mysql
    assert mysql["host"] == "dataservice-mysql"
    assert mysql["user"].startswith("app@")
    assert "MariaDB" in mysql["server"]
    assert "app" in mysql["databases"]
    assert auth["connections"]["eureka"]["status"] == 200  # a component, by its Service

    # MariaDB read the stack's configFiles (conf.d) and ran its init script (as root).
    sql = "SHOW VARIABLES LIKE 'max_connections'; SHOW DATABASES;"
    out = kubectl(
        kube_cluster,
        namespace,
        "exec",
        "statefulset/dataservice-mysql",
        "--",
        "sh",
        "-c",
        f'mariadb -uroot -p"$MYSQL_ROOT_PASSWORD" -N -e "{sql}"',
    )
    assert "max_connections\t500" in out
    assert "dataservice" in out.split()

    # Dependency order on real readiness: auth's pod was created after mysql's was ready.
    pods, _ = await client.list(POD, namespace)

    def member(name: str) -> dict[str, Any]:
        return next(p for p in pods if p["metadata"]["labels"].get("appstack.dev/member") == name)

    mysql_ready = next(
        c["lastTransitionTime"]
        for c in member("mysql")["status"]["conditions"]
        if c["type"] == "Ready"
    )
    assert member("auth")["metadata"]["creationTimestamp"] >= mysql_ready


@pytest.mark.node_ports(30165)
async def test_members_find_each_other_by_the_seeds_bare_service_names(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    """Seed 003's configuration reaches eureka as ``eureka`` (not ``<stack>-eureka``): with
    ``serviceName`` a real process resolves the bare name through cluster DNS and
    kube-proxy, with exactly the settings ``uses`` injected."""
    image = "registry.example.com/dataservice/{}:1.0"
    spec = {
        "components": [
            {
                "name": "eureka",
                "serviceName": "eureka",
                "image": image.format("eureka"),
                "ports": [{"port": 8761}],
            },
            {
                "name": "api-manager",
                "serviceName": "api-manager",
                "image": image.format("api-manager"),
                "env": {"PORT": "9085"},
                "ports": [{"port": 9085, "nodePort": 30165}],
                "uses": ["eureka"],
                "dependsOn": ["eureka"],
            },
        ]
    }
    stack = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": "dataservice", "namespace": namespace},
        "spec": spec,
    }
    await client.create(APP_STACK, stack)
    await until(client, APP_STACK, "dataservice", namespace, is_ready, 180, "the stack Ready")
    answer = json.loads(http_get(f"http://{real_node.address}:30165/"))
    assert answer["connections"]["eureka"] == {"url": "http://eureka:8761", "status": 200}


async def test_a_crontab_job_runs_a_real_container(
    client: Client,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    kube_cluster: ClusterHandle,
) -> None:
    """The seed's CronTab (busybox), with a command: its CronJob's job template runs for
    real (a Job made from it now, instead of waiting for the minute to turn)."""
    (tab,) = _load("crontab.yaml", namespace)
    tab["spec"]["command"] = ["sh", "-c", "echo hello from $(hostname)"]
    await client.create(CRON_TAB, tab)
    await until(client, CRON_TAB, "my-new-cron-object", namespace, is_ready, 60, "Ready")
    await until(client, CRON_JOB, "my-new-cron-object", namespace, lambda _: True, 30, "CronJob")
    kubectl(kube_cluster, namespace, "create", "job", "now", "--from=cronjob/my-new-cron-object")
    kubectl(
        kube_cluster, namespace, "wait", "--for=condition=Complete", "job/now", "--timeout=120s"
    )
    logs = kubectl(kube_cluster, namespace, "logs", "job/now")
    assert logs.startswith("hello from now-")


async def test_a_failing_run_makes_the_crontab_degraded_with_the_jobs_reason(
    client: Client,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    kube_cluster: ClusterHandle,
) -> None:
    """Issue #25: a run whose program exits non-zero (backoffLimit 0: the first failure
    fails the Job) and a run whose image cannot be pulled show on the CronTab as
    Ready=False, Degraded=True with the Job's / pod's reason and a Warning Event, not
    Ready=True while failed Jobs pile up; a run that succeeds clears it."""
    (tab,) = _load("crontab.yaml", namespace)
    tab["spec"]["command"] = ["sh", "-c", "test -e /tmp/ok || exit 3"]
    tab["spec"]["backoffLimit"] = 0
    # the seed's schedule runs every minute: suspended, only the runs made here exist (a
    # suspended CronJob still makes a Job on `kubectl create job --from`)
    tab["spec"]["suspend"] = True
    await client.create(CRON_TAB, tab)
    name = "my-new-cron-object"
    await until(client, CRON_TAB, name, namespace, is_ready, 60, "Ready")
    kubectl(kube_cluster, namespace, "create", "job", "fails", f"--from=cronjob/{name}")

    def degraded(reason: str) -> Callable[[dict[str, Any]], bool]:
        def check(obj: dict[str, Any]) -> bool:
            conds = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
            bad = conds.get("Degraded") or {}
            return bad.get("status") == "True" and bad.get("reason") == reason

        return check

    failed = await until(
        client, CRON_TAB, name, namespace, degraded("BackoffLimitExceeded"), 120, "Degraded"
    )
    assert failed["status"]["lastRun"] == "fails"
    assert failed["status"]["lastRunResult"] == "Failed"
    assert not is_ready(failed)
    eventually_sync(
        lambda: kubectl(kube_cluster, namespace, "events", f"--for=crontab/{name}"),
        lambda out: "BackoffLimitExceeded" in out,
        timeout=30,
        what="kubectl events to show BackoffLimitExceeded",
    )
    # A run that cannot start: its image does not exist.
    patch = {"spec": {"image": "busybox:0.0.0-nobody"}}
    await client.patch(CRON_TAB, name, patch, namespace=namespace)
    await until(
        client,
        CRON_JOB,
        name,
        namespace,
        lambda c: "nobody" in str(c["spec"]["jobTemplate"]),
        30,
        "the new image in the CronJob",
    )
    kubectl(kube_cluster, namespace, "create", "job", "cannot-pull", f"--from=cronjob/{name}")
    pulling = await until(
        client,
        CRON_TAB,
        name,
        namespace,
        lambda o: degraded("ErrImagePull")(o) or degraded("ImagePullBackOff")(o),
        120,
        "Degraded by the pull",
    )
    assert "busybox:0.0.0-nobody" in str(pulling["status"]["conditions"])
    # Back to a working image, and a run that succeeds: Ready again.
    fixed = {"spec": {"image": tab["spec"]["image"], "command": ["true"]}}
    await client.patch(CRON_TAB, name, fixed, namespace=namespace)
    await until(
        client, CRON_JOB, name, namespace, lambda c: "nobody" not in str(c["spec"]), 30, "fixed"
    )
    kubectl(kube_cluster, namespace, "create", "job", "works", f"--from=cronjob/{name}")
    healed = await until(
        client,
        CRON_TAB,
        name,
        namespace,
        lambda o: is_ready(o) and o["status"].get("lastRunResult") == "Succeeded",
        120,
        "Ready again after a run that succeeded",
    )
    assert healed["status"]["lastRun"] == "works"


async def test_an_image_nobody_built_fails_to_pull_for_real_and_port_forward_works(
    client: Client,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    kube_cluster: ClusterHandle,
) -> None:
    """Pulls are real pulls from the local registry: an unknown image is ErrImagePull or
    ImagePullBackOff on the AppService; and ``kubectl port-forward`` reaches a pod."""
    await client.create(APP_SERVICE, _app("ghost", namespace, image="nginx:0.0.0-nobody"))
    await client.create(APP_SERVICE, _app("web", namespace, image="nginx:1.27"))

    def pull_failed(app: dict[str, Any]) -> bool:
        return _condition(app).get("reason") in ("ErrImagePull", "ImagePullBackOff")

    app = await until(client, APP_SERVICE, "ghost", namespace, pull_failed, 120, "ErrImagePull")
    assert "nginx:0.0.0-nobody" in _condition(app)["message"]
    await until(client, APP_SERVICE, "web", namespace, is_ready, 120, "web Ready")
    (pod,) = await running_pods(client, namespace, {"app.kubernetes.io/instance": "web"})
    kubectl_bin = str(kube_cluster.require_local().toolchain.binary("kubectl"))
    forward = await asyncio.create_subprocess_exec(
        kubectl_bin,
        f"--kubeconfig={kube_cluster.kubeconfig}",
        f"--namespace={namespace}",
        "port-forward",
        f"pod/{pod['metadata']['name']}",
        ":80",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        assert forward.stdout is not None
        line = (await asyncio.wait_for(forward.stdout.readline(), 30)).decode()
        port = int(line.split("127.0.0.1:", 1)[1].split(" ", 1)[0])  # "Forwarding from ..."
        page = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/", 30)
        assert "Welcome to nginx!" in page
    finally:
        forward.terminate()
        await forward.wait()

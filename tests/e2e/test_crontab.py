"""CronTab end to end: a CronJob that really runs Jobs (pods complete through kwok),
schedule validation at admission, suspend, drift and cascading delete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.controllers.crontab import CRON_TAB
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import CRON_JOB, EVENT, JOB, POD
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator


def _tab(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "CronTab",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"cronSpec": "* * * * *", "image": "busybox", **spec},
    }


def _ready(obj: dict[str, Any]) -> tuple[str, str]:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return condition["status"], condition["reason"]
    return "", ""


async def test_every_minute_runs_a_job_whose_pods_complete(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(CRON_TAB, _tab("tick", namespace, replicas=2))

    cron = await eventually(
        lambda: client.get(CRON_JOB, "tick", namespace),
        timeout=15,
        what="the CronJob",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )
    assert cron["spec"]["schedule"] == "* * * * *"
    assert cron["metadata"]["ownerReferences"][0]["kind"] == "CronTab"

    async def completed_job() -> Any:
        jobs, _ = await client.list(JOB, namespace)
        return [j for j in jobs if (j.get("status") or {}).get("succeeded") == 2]

    (job,) = (
        await eventually(
            completed_job,
            timeout=120,
            what="a Job with 2 succeeded pods",
            interval=0.2,
            retry_on=(errors.NotFound,),
        )
    )[:1]
    assert job["spec"]["parallelism"] == 2
    pods, _ = await client.list(POD, namespace)
    assert any(p["status"]["phase"] == "Succeeded" for p in pods)

    tab = await eventually(
        lambda: _with_status(client, "tick", namespace, "lastScheduleTime"),
        timeout=30,
        what="status.lastScheduleTime",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )
    assert _ready(tab) == ("True", "Scheduled")


async def _with_status(client: Client, name: str, namespace: str, field: str) -> Any:
    tab = await client.get(CRON_TAB, name, namespace)
    return tab if (tab.get("status") or {}).get(field) else None


async def test_suspend_drift_and_delete(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(CRON_TAB, _tab("nightly", namespace, cronSpec="0 3 * * *"))
    await eventually(
        lambda: client.get(CRON_JOB, "nightly", namespace),
        timeout=15,
        what="the CronJob",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )

    await client.patch(CRON_TAB, "nightly", {"spec": {"suspend": True}}, namespace=namespace)
    await eventually(
        lambda: _field(client, CRON_JOB, "nightly", namespace, "suspend", value=True),
        timeout=15,
        what="the CronJob to be suspended",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )
    tab = await eventually(
        lambda: _reason(client, "nightly", namespace, "Suspended"),
        timeout=15,
        what="Ready reason Suspended",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )
    assert _ready(tab) == ("True", "Suspended")

    await client.patch(
        CRON_JOB, "nightly", {"spec": {"schedule": "*/1 * * * *"}}, namespace=namespace
    )  # a hand edit
    await eventually(
        lambda: _field(client, CRON_JOB, "nightly", namespace, "schedule", value="0 3 * * *"),
        timeout=10,
        what="the schedule to be restored",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )

    await client.delete(CRON_TAB, "nightly", namespace)

    async def gone() -> bool:
        try:
            await client.get(CRON_JOB, "nightly", namespace)
        except errors.NotFound:
            return True
        return False

    await eventually(
        gone,
        timeout=120,
        what="the CronJob to be garbage-collected",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )


async def _field(
    client: Client, res: Any, name: str, namespace: str, field: str, *, value: Any
) -> bool:
    return bool((await client.get(res, name, namespace))["spec"].get(field) == value)


async def _reason(client: Client, name: str, namespace: str, reason: str) -> Any:
    tab = await client.get(CRON_TAB, name, namespace)
    return tab if _ready(tab)[1] == reason else None


async def test_a_schedule_out_of_range_is_reported_as_invalid_schedule(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(CRON_TAB, _tab("late", namespace, cronSpec="61 * * * *"))
    tab = await eventually(
        lambda: _reason(client, "late", namespace, "InvalidSchedule"),
        timeout=15,
        what="Ready=False InvalidSchedule",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )
    assert _ready(tab) == ("False", "InvalidSchedule")
    assert "outside 0-59" in tab["status"]["conditions"][0]["message"]


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("* * * *", "cronSpec takes five fields"),
        ("* * * * * * *", "six with seconds first"),
        ("0 0 0 1 1 ? 2027", "cronSpec takes five fields"),  # Quartz's year field
        ("* * * * * $", "may only contain"),
        ("every minute please", "cronSpec takes five fields"),
        ("5-1 * * * * *", "cronSpec second: a range a-b must not run backwards"),
        ("0 5-1 * * * *", "cronSpec minute: a range a-b must not run backwards"),
        ("0 0 0 * * FRI-MON", "cronSpec day of week: a range a-b must not run backwards"),
        ("*/0 * * * * *", "a step /n must be a positive number"),
        ("@often", "cronSpec takes five fields"),
        ("* * * * $", "may only contain"),
        # As Kubernetes' CronJob validation, but at admission:
        ("*/0 * * * *", "a step /n must be a positive number"),
        ("1-5/00 * * * *", "a step /n must be a positive number"),
        ("5-1 * * * *", "cronSpec minute: a range a-b must not run backwards"),
        ("0 0 * * FRI-MON", "cronSpec day of week: a range a-b must not run backwards"),
        ("0 0 * DEC-jan *", "cronSpec month: a range a-b must not run backwards"),
        ("@HOURLY", "cronSpec takes five fields"),
    ],
)
async def test_malformed_schedules_are_rejected_at_admission(
    client: Client, namespace: str, schedule: str, message: str
) -> None:
    with pytest.raises(errors.Invalid) as caught:
        await client.create(CRON_TAB, _tab("bad", namespace, cronSpec=schedule))
    assert "spec.cronSpec" in caught.value.message
    assert message in caught.value.message


async def test_the_seed_example_runs_once_a_minute_and_says_so(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    example = Path(__file__).parents[2] / "examples" / "crontab.yaml"
    tab = yaml.safe_load(example.read_text())
    assert tab["spec"] == {"cronSpec": "* * * * * *", "image": "busybox"}  # the seed's
    tab["metadata"]["namespace"] = namespace
    await client.create(CRON_TAB, tab)

    cron = await eventually(
        lambda: client.get(CRON_JOB, "my-new-cron-object", namespace),
        timeout=15,
        what="the CronJob",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )
    assert cron["spec"]["schedule"] == "* * * * *"
    tab = await eventually(
        lambda: _reason(client, "my-new-cron-object", namespace, "SecondsRounded"),
        timeout=15,
        what="Ready reason SecondsRounded",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )
    (ready,) = (c for c in tab["status"]["conditions"] if c["type"] == "Ready")
    expected = (
        "cronSpec '* * * * * *' asks for 60 runs a minute (seconds field '*'); a CronJob "
        "starts at most once a minute, so it runs on '* * * * *'"
    )
    assert (ready["status"], ready["message"]) == ("True", expected)

    async def warning() -> list[dict[str, Any]]:
        events, _ = await client.list(EVENT, namespace)
        return [
            e
            for e in events
            if e["regarding"]["name"] == "my-new-cron-object" and e["type"] == "Warning"
        ]

    # The CronJob's creation and our status write wake the CronTab again (the work queue may
    # fold the two into one reconcile), while the cache may still hold the status from
    # before; a label change then wakes it once more. The Event must still be said once.
    registry = operator.manager.metrics.registry
    sample = {"controller": "crontab", "result": "success"}

    def reconciles() -> float:
        return registry.get_sample_value("controller_runtime_reconcile_total", sample) or 0

    await eventually(
        lambda: reconciles() >= 2,
        timeout=15,
        what="the reconcile that follows the first",
        interval=0.2,
    )
    before = reconciles()
    await client.patch(
        CRON_TAB,
        "my-new-cron-object",
        {"metadata": {"labels": {"touched": "yes"}}},
        namespace=namespace,
    )
    await eventually(
        lambda: reconciles() > before,
        timeout=15,
        what="the reconcile after a label change",
        interval=0.2,
    )
    (event,) = await eventually(
        warning, timeout=15, what="the Warning Event", interval=0.2, retry_on=(errors.NotFound,)
    )
    assert (event["reason"], event["note"]) == ("SecondsRounded", expected)
    assert "series" not in event, "said once, not on every reconcile"


@pytest.mark.parametrize(
    ("cron_spec", "schedule"),
    [
        # As Kubernetes reads five fields and macros: unchanged.
        ("*/5  * * * *", "*/5  * * * *"),
        (" 0 3 * * mon-fri ", " 0 3 * * mon-fri "),
        ("@every 90m", "@every 90m"),
        # One value in the seconds field: the same minutes, exactly.
        ("0 */5 * * * *", "*/5 * * * *"),
        ("*/60 0 3 * * *", "0 3 * * *"),
    ],
)
async def test_schedules_kubernetes_accepts_become_a_cron_job(
    client: Client, namespace: str, operator: RunningOperator, cron_spec: str, schedule: str
) -> None:
    await client.create(CRON_TAB, _tab("spaced", namespace, cronSpec=cron_spec))
    cron = await eventually(
        lambda: client.get(CRON_JOB, "spaced", namespace),
        timeout=15,
        what="the CronJob",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )
    assert cron["spec"]["schedule"] == schedule
    tab = await eventually(
        lambda: _reason(client, "spaced", namespace, "Scheduled"),
        timeout=15,
        what="Ready",
        interval=0.2,
        retry_on=(errors.NotFound,),
    )
    assert _ready(tab) == ("True", "Scheduled")


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        ("n" * 53, {}, "metadata.name must be at most 52 characters"),
        ("has.dot", {}, "metadata.name must contain only"),
        ("ok", {"image": "busybox:"}, "spec.image"),
    ],
)
async def test_names_and_images_that_cannot_work_are_rejected_at_admission(
    client: Client, namespace: str, name: str, spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(errors.Invalid) as caught:
        await client.create(CRON_TAB, _tab(name, namespace, **spec))
    assert message in caught.value.message, caught.value.message


async def test_replicas_must_be_positive_at_admission(client: Client, namespace: str) -> None:
    with pytest.raises(errors.Invalid) as caught:
        await client.create(CRON_TAB, _tab("zero", namespace, replicas=0))
    assert "spec.replicas" in caught.value.message

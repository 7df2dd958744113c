"""CronTab: schedule validation and CronTab → CronJob, without a cluster."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.cron import cron_job_schedule
from appstack.api.crontab import CronTab, CronTabSpec, cron_problem
from appstack.controllers.crontab import desired
from appstack.controllers.crontab.status import from_cron_job
from appstack.controllers.util.workloads import BASELINE, RESTRICTED
from appstack.sdk.kit.conditions import Problem


@pytest.mark.parametrize(
    "schedule",
    [
        "* * * * *",
        "*/5 * * * *",
        "0 3 * * MON-FRI",
        "15,45 9-17 1 JAN-JUN 0",
        "@hourly",
        "@daily",
        "0 0 ? * 6",
        # What Kubernetes' CronJob validation also accepts (tried on the test bed):
        "*/5  * * * *",
        " */5 * * * * ",
        "*/5\t* * * *",
        "@every 5m",
        "@every 1h30m",
        "0 0 * jan-mar sun-sat",
        "5/10 * * * *",
        "*/100 * * * *",
        "*-5 * * * *",
        "1,,2 * * * *",
        # Six fields, seconds first (robfig/cron WithSeconds, Quartz, Spring):
        "* * * * * *",  # the seed's own example
        "0 */5 * * * *",
        "*/10 0 3 ? * MON-FRI",
        " 59  * * * * * ",
    ],
)
def test_standard_schedules_and_macros_are_accepted(schedule: str) -> None:
    assert cron_problem(schedule) is None


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("* * * *", "takes five fields"),
        ("* * * * * * *", "six with seconds first"),  # Quartz's year field: not here
        ("60 * * * * *", "cronSpec second '60': '60' is outside 0-59"),
        ("5-1 * * * * *", "second '5-1': the range '5-1' runs backwards"),
        ("*/0 * * * * *", "step of '*/0' must be a positive number"),
        ("0 60 * * * *", "minute '60'"),
        ("0 0 0 * * 7", "day of week '7'"),
        ("@often", "takes five fields"),
        ("60 * * * *", "minute '60': '60' is outside 0-59"),
        ("* 24 * * *", "hour '24'"),
        ("* * 0 * *", "day of month '0'"),
        ("* * * 13 *", "month '13'"),
        ("* * * * 8", "day of week '8'"),
        ("* * * FOO *", "month 'FOO'"),
        ("*/x * * * *", "is not a value, range or step"),
        # ... and what it refuses:
        ("0 0 ? * 7", "day of week '7'"),
        ("*/0 * * * *", "step of '*/0' must be a positive number"),
        ("1-5/0 * * * *", "must be a positive number"),
        ("5-1 * * * *", "the range '5-1' runs backwards"),
        ("0 0 * * FRI-MON", "runs backwards"),
        ("5-* * * * *", "is not a value, range or step"),
        ("1-2-3 * * * *", "is not a value, range or step"),
        ("1//2 * * * *", "is not a value, range or step"),
        ("@HOURLY", "takes five fields"),
        ("@every", "takes five fields"),
    ],
)
def test_malformed_schedules_are_explained(schedule: str, message: str) -> None:
    problem = cron_problem(schedule)
    assert problem is not None
    assert message in problem


def _tab(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "CronTab",
        "metadata": {"name": "tick", "namespace": "ns", "uid": "u", "generation": 2},
        "spec": {"cronSpec": "*/5 * * * *", "image": "busybox", **spec},
    }


def test_a_crontab_becomes_an_owned_cron_job_with_replicas_as_parallelism() -> None:
    tab = _tab(
        replicas=3,
        suspend=True,
        timeZone="Europe/Berlin",
        command=["date"],
        concurrencyPolicy="Forbid",
    )
    cron = desired.cron_job(tab, CronTabSpec.model_validate(tab["spec"]))
    spec = cron["spec"]
    assert spec["schedule"] == "*/5 * * * *"
    assert spec["suspend"] is True
    assert spec["timeZone"] == "Europe/Berlin"
    assert spec["concurrencyPolicy"] == "Forbid"
    job = spec["jobTemplate"]["spec"]
    assert (job["parallelism"], job["completions"]) == (3, 3)
    assert job["template"]["spec"]["containers"][0] == {
        "name": "job",
        "image": "busybox",
        "command": ["date"],
        "securityContext": BASELINE,  # outside restricted namespaces: runs root images too
    }
    assert cron["metadata"]["ownerReferences"][0]["uid"] == "u"


def test_status_reports_runs_and_the_ready_condition() -> None:
    tab = _tab()
    cron = {
        "spec": {"schedule": "*/5 * * * *"},
        "status": {
            "active": [{"name": "tick-1"}],
            "lastScheduleTime": "2026-11-23T02:00:00Z",
            "lastSuccessfulTime": "2026-11-23T01:55:07Z",
        },
    }
    status = from_cron_job(tab, cron, None, "now").to_dict()
    assert status["active"] == 1
    assert status["activeJobs"] == ["tick-1"]
    assert status["lastScheduleTime"] == "2026-11-23T02:00:00Z"
    assert status["conditions"][0]["reason"] == "Scheduled"
    failed = from_cron_job(tab, cron, Problem("InvalidSchedule", "bad"), "later").to_dict()
    assert failed["conditions"][0]["status"] == "False"


def _job(name: str, created: str, condition: str | None = None, **extra: str) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if condition:
        status["conditions"] = [{"type": condition, "status": "True", **extra}]
    meta = {"name": name, "creationTimestamp": created}
    return {"metadata": meta, "status": status}


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


CRON = {"spec": {"schedule": "*/5 * * * *"}, "status": {}}


def test_the_newest_run_failing_makes_the_crontab_degraded_until_a_run_succeeds() -> None:
    tab = _tab()
    failed = _job(
        "tick-2",
        "2026-11-23T02:05:00Z",
        "Failed",
        reason="BackoffLimitExceeded",
        message="Job has reached the specified backoff limit",
    )
    ok = _job("tick-1", "2026-11-23T02:00:00Z", "Complete")
    status = from_cron_job(tab, CRON, None, "now", jobs=[ok, failed]).to_dict()
    assert _conditions(status) == {
        "Ready": ("False", "BackoffLimitExceeded"),
        "Degraded": ("True", "BackoffLimitExceeded"),
    }
    assert (
        "run tick-2 failed: Job has reached the specified backoff limit"
        in (status["conditions"][1]["message"])
    )
    assert (status["lastRun"], status["lastRunResult"]) == ("tick-2", "Failed")
    later = _job("tick-3", "2026-11-23T02:10:00Z", "Complete")
    healed = from_cron_job(tab, CRON, None, "now", jobs=[ok, failed, later]).to_dict()
    assert _conditions(healed) == {
        "Ready": ("True", "Scheduled"),
        "Degraded": ("False", "AsExpected"),
    }
    assert healed["lastRunResult"] == "Succeeded"


def test_a_run_whose_pod_cannot_start_is_reported_with_the_pods_reason() -> None:
    running = _job("tick-4", "2026-11-23T02:15:00Z")
    waiting = {"reason": "ErrImagePull", "message": "pull access denied"}
    pod = {
        "metadata": {"name": "tick-4-abcde", "labels": {"job-name": "tick-4"}},
        "status": {"containerStatuses": [{"name": "job", "state": {"waiting": waiting}}]},
    }
    other = {**pod, "metadata": {"name": "x", "labels": {"job-name": "tick-1"}}}
    status = from_cron_job(_tab(), CRON, None, "now", jobs=[running], pods=[pod]).to_dict()
    assert _conditions(status)["Degraded"] == ("True", "ErrImagePull")
    assert (
        "run tick-4: pod tick-4-abcde: container job: pull access denied"
        in (status["conditions"][1]["message"])
    )
    assert status["lastRunResult"] == "Running"
    fine = from_cron_job(_tab(), CRON, None, "now", jobs=[running], pods=[other]).to_dict()
    assert _conditions(fine)["Degraded"] == ("False", "AsExpected")


def test_job_settings_have_the_cron_jobs_meaning() -> None:
    tab = _tab(startingDeadlineSeconds=120, backoffLimit=0, activeDeadlineSeconds=600)
    cron = desired.cron_job(tab, CronTabSpec.model_validate(tab["spec"]))
    assert cron["spec"]["startingDeadlineSeconds"] == 120
    job = cron["spec"]["jobTemplate"]["spec"]
    assert (job["backoffLimit"], job["activeDeadlineSeconds"]) == (0, 600)
    default = desired.cron_job(_tab(), CronTabSpec.model_validate(_tab()["spec"]))
    assert "startingDeadlineSeconds" not in default["spec"]
    assert default["spec"]["jobTemplate"]["spec"]["backoffLimit"] == 6


def test_the_model_rejects_four_and_seven_fields() -> None:
    for schedule in ("* * * *", "0 0 0 1 1 ? 2027"):
        with pytest.raises(ValidationError, match="takes five fields"):
            CronTabSpec.model_validate({"cronSpec": schedule, "image": "busybox"})


@pytest.mark.parametrize(
    ("cron_spec", "schedule", "runs"),
    [
        ("*/5 * * * *", "*/5 * * * *", None),  # five fields: unchanged
        (" */5  * * * * ", " */5  * * * * ", None),
        ("@hourly", "@hourly", None),
        ("0 */5 * * * *", "*/5 * * * *", None),  # one second value: the same minutes
        ("*/60 0 3 * * *", "0 3 * * *", None),  # */60 is second 0 only
        ("* * * * * *", "* * * * *", 60),  # the seed's example: every second
        ("*/10 * * * * *", "* * * * *", 6),
        ("0,30 0 3 * * *", "0 3 * * *", 2),
    ],
)
def test_a_seconds_field_is_dropped_and_rounding_is_said(
    cron_spec: str, schedule: str, runs: int | None
) -> None:
    mapped = cron_job_schedule(cron_spec)
    assert mapped.schedule == schedule
    if runs is None:
        assert mapped.rounded is None
    else:
        assert mapped.rounded == (
            f"cronSpec {cron_spec!r} asks for {runs} runs a minute (seconds field "
            f"{cron_spec.split(maxsplit=1)[0]!r}); a CronJob starts at most once a minute, "
            f"so it runs on {schedule!r}"
        )


def test_the_seed_example_runs_once_a_minute_and_says_so() -> None:
    tab = _tab(cronSpec="* * * * * *")
    cron = desired.cron_job(tab, CronTabSpec.model_validate(tab["spec"]))
    assert cron["spec"]["schedule"] == "* * * * *"
    ready, _ = from_cron_job(tab, cron, None, "now").to_dict()["conditions"]
    assert (ready["status"], ready["reason"]) == ("True", "SecondsRounded")
    assert "'* * * * * *' asks for 60 runs a minute" in ready["message"]
    assert "runs on '* * * * *'" in ready["message"]


def test_a_single_nonzero_second_is_named_in_the_scheduled_message() -> None:
    tab = _tab(cronSpec="30 0 3 * * *")
    cron = desired.cron_job(tab, CronTabSpec.model_validate(tab["spec"]))
    ready, _ = from_cron_job(tab, cron, None, "now").to_dict()["conditions"]
    assert (ready["reason"], cron["spec"]["schedule"]) == ("Scheduled", "0 3 * * *")
    assert "not at second 30" in ready["message"]


def test_a_crontab_runs_restricted_in_a_restricted_namespace_or_when_it_asks() -> None:
    tab = _tab()
    spec = CronTabSpec.model_validate(tab["spec"])
    job = desired.cron_job(tab, spec, "restricted")["spec"]["jobTemplate"]["spec"]["template"]
    assert job["spec"]["containers"][0]["securityContext"] == RESTRICTED
    asked = CronTabSpec.model_validate({**tab["spec"], "podSecurity": "restricted"})
    job = desired.cron_job(tab, asked)["spec"]["jobTemplate"]["spec"]["template"]
    assert job["spec"]["containers"][0]["securityContext"] == RESTRICTED


def test_env_resources_pull_secrets_account_and_ttl_reach_the_job() -> None:
    tab = _tab(
        env=[{"name": "MODE", "value": "batch"}, {"name": "TOKEN", "valueFrom": _SECRET}],
        envFrom=[
            {"configMapRef": {"name": "settings"}},
            {"prefix": "DB_", "secretRef": {"name": "db"}},
        ],
        resources={"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
        imagePullSecrets=[{"name": "regcred"}],
        serviceAccountName="reporter",
        ttlSecondsAfterFinished=600,
    )
    job = desired.cron_job(tab, CronTabSpec.model_validate(tab["spec"]))["spec"]["jobTemplate"]
    assert job["spec"]["ttlSecondsAfterFinished"] == 600
    pod = job["spec"]["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["serviceAccountName"] == "reporter"
    (container,) = pod["containers"]
    assert container["env"] == tab["spec"]["env"]
    assert container["envFrom"] == tab["spec"]["envFrom"]
    assert container["resources"] == tab["spec"]["resources"]


def test_a_crontab_without_the_new_fields_renders_as_before() -> None:
    tab = _tab()
    job = desired.cron_job(tab, CronTabSpec.model_validate(tab["spec"]))["spec"]["jobTemplate"]
    assert "ttlSecondsAfterFinished" not in job["spec"]
    assert set(job["spec"]["template"]["spec"]) == {"restartPolicy", "containers"}
    assert set(job["spec"]["template"]["spec"]["containers"][0]) == {
        "name",
        "image",
        "securityContext",
    }


@pytest.mark.parametrize(
    ("spec", "says", "field"),
    [
        (
            {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]},
            "duplicate",
            ("env",),
        ),
        (
            {"envFrom": [{"prefix": "X_"}]},
            "envFrom needs exactly one of configMapRef, secretRef",
            ("envFrom", 0),
        ),
        ({"resources": {"requests": ["cpu"]}}, "dictionary", ("resources", "requests")),
        ({"serviceAccountName": "Reporter"}, "pattern", ("serviceAccountName",)),
        ({"ttlSecondsAfterFinished": -1}, "greater than", ("ttlSecondsAfterFinished",)),
        # AppService's name, not CronTab's
        ({"envs": [{"name": "A", "value": "1"}]}, "Extra inputs", ("envs",)),
    ],
)
def test_bad_job_fields_are_refused(
    spec: dict[str, Any], says: str, field: tuple[str | int, ...]
) -> None:
    """A whole CronTab, validated as admission validates it (CEL rules too)."""
    with pytest.raises(ValidationError) as caught:
        CronTab.model_validate(_tab(**spec))
    (error,) = caught.value.errors()
    assert says in error["msg"]
    assert error["loc"] == ("spec", *field)


_SECRET = {"secretKeyRef": {"name": "token", "key": "value"}}

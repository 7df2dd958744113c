"""When a five-field cron schedule next runs (appstack.api.cron_times), without a cluster."""

from __future__ import annotations

import datetime

import pytest

from appstack.api.cron_times import next_time, parse

UTC = datetime.timezone.utc


def at(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("spec", "after", "want"),
    [
        ("* * * * *", "2026-11-23 16:44:17", "2026-11-23 16:45:00"),
        ("* * * * *", "2026-11-23 16:44:00", "2026-11-23 16:45:00"),  # strictly after
        ("*/15 * * * *", "2026-11-23 16:44:59", "2026-11-23 16:45:00"),
        ("*/15 * * * *", "2026-11-23 16:45:00", "2026-11-23 17:00:00"),
        ("0 */6 * * *", "2026-11-23 16:44:00", "2026-11-23 18:00:00"),
        ("30 2 * * *", "2026-11-23 16:44:00", "2026-11-24 02:30:00"),
        ("0 0 1 * *", "2026-12-15 00:00:00", "2027-01-01 00:00:00"),  # year rolls over
        ("0 9 * * MON-FRI", "2026-11-27 10:00:00", "2026-11-30 09:00:00"),  # Fri → Mon
        ("0 0 29 2 *", "2026-03-01 00:00:00", "2028-02-29 00:00:00"),  # leap day
        ("5-10/5 1 * jan,Dec ?", "2026-11-23 00:00:00", "2026-12-01 01:05:00"),
        ("@hourly", "2026-11-23 16:44:00", "2026-11-23 17:00:00"),
        ("@daily", "2026-11-23 16:44:00", "2026-11-24 00:00:00"),
        ("@weekly", "2026-11-23 16:44:00", "2026-11-29 00:00:00"),  # Sunday
        ("@monthly", "2026-11-23 16:44:00", "2026-12-01 00:00:00"),
        ("@yearly", "2026-11-23 16:44:00", "2027-01-01 00:00:00"),
    ],
)
def test_next_time(spec: str, after: str, want: str) -> None:
    assert next_time(spec, at(after)) == at(want)


def test_day_of_month_and_day_of_week_either_when_both_are_restricted() -> None:
    # The 1st or any Monday (Vixie cron, Kubernetes' CronJobs): Nov 23 2026 is a Monday.
    assert next_time("0 0 1 * MON", at("2026-11-23 01:00:00")) == at("2026-11-30 00:00:00")
    assert next_time("0 0 1 * MON", at("2026-11-30 01:00:00")) == at("2026-12-01 00:00:00")
    # One side unrestricted: both must match (every Monday, whatever the date).
    assert next_time("0 0 * * MON", at("2026-11-23 01:00:00")) == at("2026-11-30 00:00:00")
    # A stepped star restricts: the 1st, 3rd, ... or a Monday.
    assert next_time("0 0 */2 * MON", at("2026-11-23 01:00:00")) == at("2026-11-25 00:00:00")


def test_other_zones_are_read_as_the_same_instant() -> None:
    berlin = datetime.timezone(datetime.timedelta(hours=1))
    after = datetime.datetime(2026, 11, 23, 17, 44, tzinfo=berlin)  # 16:44 UTC
    assert next_time("0 * * * *", after) == at("2026-11-23 17:00:00")


def test_a_date_that_never_comes_has_no_next_time() -> None:
    assert next_time("0 0 30 2 *", at("2026-11-23 00:00:00")) is None
    assert next_time("0 0 31 4,6,9,11 *", at("2026-11-23 00:00:00")) is None


def test_invalid_schedules_are_refused() -> None:
    with pytest.raises(ValueError, match="minute"):
        parse("60 * * * *")
    with pytest.raises(ValueError, match="five-field"):
        parse("0 * * * * *")
    with pytest.raises(ValueError, match="five-field"):
        parse("@every 1h")

"""appstack_testbed.waiting, the one wait: returns the first value that passes, retries only
the listed exceptions and a lightkube 404, lets the event loop run between polls, and on
timeout names what it waited for and the last thing it saw; condition_status reads one
condition of an object."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from lightkube import ApiError
from lightkube.models.meta_v1 import Status

from appstack_testbed.waiting import WaitTimeout, condition_status, eventually, eventually_sync


def _api_error(code: int, reason: str) -> ApiError:
    return ApiError(status=Status(code=code, reason=reason, message=f'configmaps "x": {reason}'))


async def test_an_async_probe_is_awaited_until_the_check_holds() -> None:
    counter = itertools.count()

    async def probe() -> int:
        return next(counter)

    assert await eventually(probe, lambda n: n >= 3, timeout=5, what="3", interval=0) == 3


async def test_a_sync_probe_and_the_default_check_of_truthiness() -> None:
    values = iter([0, "", "yes"])
    assert await eventually(lambda: next(values), timeout=5, what="truthy", interval=0) == "yes"


async def test_the_event_loop_runs_between_polls_of_a_sync_probe() -> None:
    done: list[str] = []

    async def code_under_test() -> None:
        await asyncio.sleep(0.05)
        done.append("reconciled")

    task = asyncio.create_task(code_under_test())
    assert await eventually(lambda: done, timeout=5, what="the reconcile", interval=0.01)
    await task


async def test_listed_exceptions_are_not_yet_and_others_fail_at_once() -> None:
    calls = iter([KeyError("gone"), KeyError("gone"), 7])

    def probe() -> int:
        value = next(calls)
        if isinstance(value, Exception):
            raise value
        return value

    assert await eventually(probe, timeout=5, what="7", interval=0, retry_on=(KeyError,)) == 7

    def missing() -> int:
        raise KeyError("unlisted")

    with pytest.raises(KeyError, match="unlisted"):
        await eventually(missing, timeout=5, what="never", interval=0)


@pytest.mark.parametrize("form", ["async", "sync"])
async def test_a_404_api_error_is_not_yet_and_another_api_error_fails_at_once(form: str) -> None:
    calls = iter([_api_error(404, "NotFound"), "there"])

    def appears() -> str:
        value = next(calls)
        if isinstance(value, ApiError):
            raise value
        return value

    def forbidden() -> str:
        raise _api_error(403, "Forbidden")

    if form == "sync":
        assert eventually_sync(appears, timeout=5, what="x", interval=0) == "there"
        with pytest.raises(ApiError, match="Forbidden"):
            eventually_sync(forbidden, timeout=5, what="x", interval=0)
    else:
        assert await eventually(appears, timeout=5, what="x", interval=0) == "there"
        with pytest.raises(ApiError, match="Forbidden"):
            await eventually(forbidden, timeout=5, what="x", interval=0)


def test_a_timeout_on_404s_says_not_found() -> None:
    def probe() -> None:
        raise _api_error(404, "NotFound")

    with pytest.raises(WaitTimeout, match=r"waiting for x; last seen: ApiError 404 NotFound: "):
        eventually_sync(probe, timeout=0.05, what="x", interval=0.01)


async def test_a_timeout_names_what_and_the_last_value_seen() -> None:
    with pytest.raises(WaitTimeout, match=r"after 0\.2s waiting for the answer; last seen: 41"):
        await eventually(lambda: 41, lambda n: n == 42, timeout=0.2, what="the answer")


async def test_a_timeout_after_an_exception_names_it_and_chains_it() -> None:
    def probe() -> None:
        raise LookupError("not there")

    with pytest.raises(WaitTimeout, match=r"LookupError.*not there") as caught:
        await eventually(probe, timeout=0.1, what="x", retry_on=(LookupError,))
    assert isinstance(caught.value.__cause__, LookupError)
    assert isinstance(caught.value, AssertionError)  # a test failure, not an error


def test_the_sync_form_behaves_the_same() -> None:
    values = iter([None, 0, 3])
    assert eventually_sync(lambda: next(values), timeout=5, what="3", interval=0.001) == 3
    with pytest.raises(WaitTimeout, match=r"waiting for the answer; last seen: \[\]"):
        eventually_sync(list, timeout=0.05, what="the answer")


async def test_a_timeout_adds_what_diagnose_says() -> None:
    with pytest.raises(WaitTimeout, match="last seen: False\nthe log tail"):
        await eventually(lambda: False, timeout=0, what="x", diagnose=lambda: "the log tail")


def test_condition_status_reads_dicts() -> None:
    obj = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert condition_status(obj, "Ready") == "True"
    assert condition_status(obj, "Available") is None
    assert condition_status({}, "Ready") is None

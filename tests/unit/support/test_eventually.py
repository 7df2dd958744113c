"""tests.support.eventually: returns the first value that passes, retries only the listed
exceptions, and on timeout names what it waited for and the last thing it saw."""

from __future__ import annotations

import itertools

import pytest

from tests.support.eventually import Timeout, eventually, eventually_sync


async def test_an_async_probe_is_awaited_until_the_check_holds() -> None:
    counter = itertools.count()

    async def probe() -> int:
        return next(counter)

    assert await eventually(probe, lambda n: n >= 3, timeout=5, what="3", interval=0) == 3


async def test_a_sync_probe_and_the_default_check_of_truthiness() -> None:
    values = iter([0, "", "yes"])
    assert await eventually(lambda: next(values), timeout=5, what="truthy", interval=0) == "yes"


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


async def test_a_timeout_names_what_and_the_last_value_seen() -> None:
    with pytest.raises(Timeout, match=r"after 0\.2s waiting for the answer; last seen: 41"):
        await eventually(lambda: 41, lambda n: n == 42, timeout=0.2, what="the answer")


async def test_a_timeout_after_an_exception_names_it_and_chains_it() -> None:
    def probe() -> None:
        raise LookupError("not there")

    with pytest.raises(Timeout, match=r"LookupError.*not there") as caught:
        await eventually(probe, timeout=0.1, what="x", retry_on=(LookupError,))
    assert isinstance(caught.value.__cause__, LookupError)
    assert isinstance(caught.value, AssertionError)  # a test failure, not an error


def test_the_sync_form_behaves_the_same() -> None:
    values = iter([1, 2, 3])
    assert eventually_sync(lambda: next(values), lambda n: n == 3, timeout=5, what="3") == 3
    with pytest.raises(Timeout, match="waiting for zero; last seen: 1"):
        eventually_sync(lambda: 1, lambda n: n == 0, timeout=0.1, what="zero")


async def test_a_timeout_adds_what_diagnose_says() -> None:
    with pytest.raises(Timeout, match="last seen: False\nthe log tail"):
        await eventually(lambda: False, timeout=0, what="x", diagnose=lambda: "the log tail")

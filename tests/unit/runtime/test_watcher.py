"""Each transition of the list/watch state machine, fed scripted answers at the transport."""

from __future__ import annotations

import pytest

from appstack.runtime import errors
from appstack.runtime.ratelimit import ItemExponentialBackoff, Jittered
from appstack.runtime.resources import CONFIG_MAP
from appstack.runtime.watcher import (
    Applied,
    Bookmarked,
    Deleted,
    Empty,
    EmptyWatch,
    Listing,
    ListWatch,
    MalformedEvent,
    Restarted,
    State,
    Step,
    StepBackoff,
    Streaming,
    Unserved,
    Watching,
    step,
)
from tests.support.scripted_transport import (
    RecordingClock,
    bookmark,
    cm,
    event,
    scripted_client,
)

QUERY = ListWatch(CONFIG_MAP, "ns", label_selector="a=b", page_size=2, watch_timeout=60)


@pytest.fixture
def clock() -> RecordingClock:
    return RecordingClock()


# ------------------------------------------------------------------------------- LIST
async def test_a_single_page_list_restarts_the_cache_and_goes_watching(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.page(["a", "b"], "7")

    result = await step(Empty(), client, QUERY, clock)

    assert result == Step(Watching("7"), (Restarted([cm("a", "7"), cm("b", "7")], "7"),))
    request, _ = transport.sent[0]
    assert request.method == "GET"
    assert request.path == "/api/v1/namespaces/ns/configmaps"
    assert request.params == {"limit": "2", "labelSelector": "a=b"}


async def test_a_paginated_list_carries_its_token_and_items_until_the_last_page(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.page(["a", "b"], "7", token="t1").page(["c"], "7")

    first = await step(Empty(), client, QUERY, clock)
    assert first == Step(Listing("t1", [cm("a", "7"), cm("b", "7")]))
    last = await step(first.state, client, QUERY, clock)

    assert last.state == Watching("7")
    assert last.events == (Restarted([cm("a", "7"), cm("b", "7"), cm("c", "7")], "7"),)
    assert transport.sent[1][0].params["continue"] == "t1"


async def test_an_expired_continue_token_starts_the_list_over_at_once(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.answer(410, {"kind": "Status", "code": 410, "reason": "Expired", "message": "x"})

    result = await step(Listing("t1", [cm("a", "7")]), client, QUERY, clock)

    assert result.state == Empty()
    assert isinstance(result.error, errors.Gone)
    assert not result.backoff


async def test_a_failed_page_is_retried_from_the_same_token_after_backoff(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.answer(500, {"kind": "Status", "code": 500, "message": "etcd"})
    transport.fail(errors.TransportError("connection refused"))
    transport.page(["x"], "7").answer(body={"items": [{"no": "metadata"}], "metadata": {}})
    listing = Listing("t1", [cm("a", "7")])

    for _ in range(2):
        result = await step(listing, client, QUERY, clock)
        assert result.state == listing
        assert result.backoff
    assert isinstance(result.error, errors.TransportError)
    assert (await step(Empty(), client, QUERY, clock)).state == Watching("7")
    malformed = await step(Empty(), client, QUERY, clock)
    assert malformed.state == Empty()
    assert isinstance(malformed.error, MalformedEvent)
    assert malformed.backoff


# ------------------------------------------------------------------------------ WATCH
async def test_watching_opens_a_watch_with_bookmarks_from_its_resource_version(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.stream(event("ADDED", cm("a", "8")))

    result = await step(Watching("5"), client, QUERY, clock)

    assert isinstance(result.state, Streaming)
    assert (result.state.resource_version, result.state.seen) == ("8", True)
    assert result.events == (Applied(cm("a", "8")),)
    request, timeouts = transport.sent[0]
    assert request.stream
    assert request.params == {
        "watch": "1",
        "allowWatchBookmarks": "true",
        "resourceVersion": "5",
        "timeoutSeconds": "60",
        "labelSelector": "a=b",
    }
    assert timeouts.total is None
    assert timeouts.read == QUERY.inactivity_timeout


async def test_streaming_delivers_updates_deletes_and_follows_bookmarks(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.stream(
        event("ADDED", cm("a", "8")),
        event("MODIFIED", cm("a", "9")),
        bookmark("12"),
        event("DELETED", cm("a", "13")),
    )
    state = (await step(Watching("5"), client, QUERY, clock)).state

    seen = []
    for _ in range(3):
        result = await step(state, client, QUERY, clock)
        state = result.state
        assert isinstance(state, Streaming)
        seen.append((state.resource_version, result.events))

    assert seen == [
        ("9", (Applied(cm("a", "9")),)),
        ("12", (Bookmarked("12"),)),
        ("13", (Deleted(cm("a", "13")),)),
    ]


async def test_a_410_when_opening_or_inside_the_stream_leads_to_a_relist(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    transport.answer(410, gone)
    transport.stream(event("ERROR", gone))

    at_open = await step(Watching("5"), client, QUERY, clock)
    in_stream = await step(Watching("5"), client, QUERY, clock)

    for result in (at_open, in_stream):
        assert result.state == Empty()
        assert isinstance(result.error, errors.Gone)
        assert not result.backoff


NOT_FOUND = {"kind": "Status", "code": 404, "reason": "NotFound", "message": "not found"}


@pytest.mark.parametrize("state", [Empty(), Listing("t", [cm("a", "1")]), Unserved()])
async def test_a_404_on_a_list_empties_the_cache_and_waits_unserved_after_backoff(
    clock: RecordingClock, state: State
) -> None:
    client, transport = scripted_client()
    transport.answer(404, NOT_FOUND)

    result = await step(state, client, QUERY, clock)

    assert result.state == Unserved()
    assert result.events == (Restarted([], ""),)  # nothing stale stays cached
    assert isinstance(result.error, errors.NotFound)
    assert result.backoff


async def test_an_unserved_kind_is_listed_from_the_start_once_served() -> None:
    client, transport = scripted_client()
    transport.page(["a"], "3")

    result = await step(Unserved(), client, QUERY, RecordingClock())

    assert result == Step(Watching("3"), (Restarted([cm("a", "3")], "3"),))
    assert "continue" not in transport.sent[0][0].params


async def test_a_404_opening_a_watch_lists_again_to_find_out_after_backoff(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.answer(404, NOT_FOUND)

    result = await step(Watching("5"), client, QUERY, clock)

    assert result.state == Empty()
    assert isinstance(result.error, errors.NotFound)
    assert result.backoff


async def test_a_stream_that_ends_at_once_and_empty_is_backed_off(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.stream()

    result = await step(Watching("5"), client, QUERY, clock)

    assert result.state == Watching("5")
    assert isinstance(result.error, EmptyWatch)
    assert result.backoff


async def test_a_stream_that_ends_after_its_timeout_or_with_events_is_simply_reopened(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.stream().stream(event("ADDED", cm("a", "8")))
    ended_late = Streaming("5", client.watch(CONFIG_MAP, resource_version="5"), clock.now() - 60)
    quiet = await step(ended_late, client, QUERY, clock)
    busy = await step(Watching("5"), client, QUERY, clock)
    ended_busy = await step(busy.state, client, QUERY, clock)

    assert quiet == Step(Watching("5"))
    assert ended_busy == Step(Watching("8"))


async def test_a_stalled_stream_or_an_unreachable_server_reopens_the_watch_after_backoff(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.stream(event("ADDED", cm("a", "8")), errors.WatchStalled("no event for 330s"))
    transport.fail(errors.TransportError("connection refused"))

    opened = await step(Watching("5"), client, QUERY, clock)
    stalled = await step(opened.state, client, QUERY, clock)
    refused = await step(Watching("8"), client, QUERY, clock)

    assert stalled.state == Watching("8")
    assert isinstance(stalled.error, errors.WatchStalled)
    assert refused.state == Watching("8")
    assert stalled.backoff
    assert refused.backoff


@pytest.mark.parametrize(
    "bad",
    [
        event("MODIFIED", {"no": "metadata"}),
        event("SURPRISE", cm("a", "9")),
        b"{not json",
    ],
)
async def test_a_malformed_event_closes_the_stream_and_lists_afresh(
    clock: RecordingClock, bad: dict[str, object] | bytes
) -> None:
    client, transport = scripted_client()
    transport.stream(event("ADDED", cm("a", "8")), bad, event("ADDED", cm("b", "9")))
    opened = await step(Watching("5"), client, QUERY, clock)
    assert isinstance(opened.state, Streaming)

    result = await step(opened.state, client, QUERY, clock)

    assert result.state == Empty()
    assert result.error is not None
    assert result.backoff
    with pytest.raises(StopAsyncIteration):  # closed: "b" is never read
        await anext(opened.state.stream)


# ---------------------------------------------------------------------------- prepare
def _keep_name(obj: dict[str, object]) -> dict[str, object]:
    """A ``prepare`` that keeps of an object its name and resourceVersion, marked."""
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    return {"metadata": {"name": meta["name"], "resourceVersion": meta["resourceVersion"]}, "p": 1}


def _prepared(name: str, rv: str) -> dict[str, object]:
    return {"metadata": {"name": name, "resourceVersion": rv}, "p": 1}


async def test_each_page_is_prepared_as_it_arrives_and_the_listing_holds_only_prepared_objects(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.page(["a", "b"], "7", token="t1").page(["c"], "7")
    seen: list[str] = []

    def prepare(obj: dict[str, object]) -> dict[str, object]:
        seen.append(f"{obj['metadata']['name']}@{len(transport.sent)}")  # type: ignore[index]
        return _keep_name(obj)

    query = ListWatch(CONFIG_MAP, "ns", page_size=2, prepare=prepare)
    first = await step(Empty(), client, query, clock)
    assert seen == ["a@1", "b@1"]  # before the second page was asked for
    assert first.state == Listing("t1", [_prepared("a", "7"), _prepared("b", "7")])
    last = await step(first.state, client, query, clock)

    assert seen == ["a@1", "b@1", "c@2"]  # once each
    assert last.events == (
        Restarted([_prepared("a", "7"), _prepared("b", "7"), _prepared("c", "7")], "7"),
    )


async def test_watch_events_carry_prepared_objects_and_bookmarks_are_left_alone(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    transport.stream(event("ADDED", cm("a", "8")), bookmark("9"), event("DELETED", cm("a", "10")))
    query = ListWatch(CONFIG_MAP, "ns", prepare=_keep_name)

    opened = await step(Watching("5"), client, query, clock)
    marked = await step(opened.state, client, query, clock)
    deleted = await step(marked.state, client, query, clock)

    assert opened.events == (Applied(_prepared("a", "8")),)
    assert marked.events == (Bookmarked("9"),)
    assert deleted.events == (Deleted(_prepared("a", "10")),)
    assert deleted.state.resource_version == "10"  # type: ignore[union-attr]


async def test_a_prepare_that_fails_lists_afresh_after_backoff(clock: RecordingClock) -> None:
    client, transport = scripted_client()
    transport.page(["a"], "7", token="t1")
    transport.stream(event("ADDED", cm("a", "8")), event("ADDED", cm("b", "9")))

    def broken(obj: dict[str, object]) -> dict[str, object]:
        raise KeyError("spec")

    query = ListWatch(CONFIG_MAP, "ns", prepare=broken)
    listed = await step(Listing("t0", [_prepared("z", "6")]), client, query, clock)
    opened = await step(Watching("5"), client, query, clock)

    for result in (listed, opened):
        assert result.state == Empty()
        assert isinstance(result.error, KeyError)
        assert result.backoff
    assert transport.open_streams == 0  # the stream was closed: "b" is never read


# ---------------------------------------------------------------------------- backoff
async def test_the_backoff_wrapper_waits_on_its_clock_after_failures_and_resets_on_progress(
    clock: RecordingClock,
) -> None:
    client, transport = scripted_client()
    for _ in range(3):
        transport.stream()  # ends at once, empty
    transport.stream(bookmark("6"))
    transport.stream().stream()
    backoff = StepBackoff(clock, Jittered(ItemExponentialBackoff(0.5, 30.0), uniform=lambda: 1.0))

    state: State = Watching("5")
    for _ in range(7):  # 3 empty streams, one with a bookmark (open, end), 2 empty ones
        state = (await backoff.step(state, client, QUERY)).state

    # 0.5, 1, 2 s (+20 % jitter at uniform()=1.0) after each failure; the bookmark resets it.
    assert clock.slept == pytest.approx([0.6, 1.2, 2.4, 0.6])


async def test_a_410_relists_at_once_but_repeated_410s_back_off(clock: RecordingClock) -> None:
    client, transport = scripted_client()
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    for rv in ("6", "7", "8"):
        transport.answer(410, gone).page(["a"], rv)  # the watch is refused, the list works
    transport.stream(event("ERROR", gone)).page(["a"], "9")
    transport.stream(bookmark("10")).answer(410, gone).page(["a"], "11")
    backoff = StepBackoff(clock, Jittered(ItemExponentialBackoff(0.5, 30.0), uniform=lambda: 0.5))

    state: State = Watching("5")
    sleeps = []
    for _ in range(12):  # 4 refusals (3 at open, 1 in a stream), 4 lists, a bookmark, 410, list
        state = (await backoff.step(state, client, QUERY)).state
        sleeps.append(sum(clock.slept))

    assert state == Watching("11")
    # No wait before the first re-list; then 0.5, 1, 2 s; the bookmark resets it all.
    assert clock.slept == [0.5, 1.0, 2.0]
    assert sleeps[-3:] == [3.5, 3.5, 3.5]


async def test_a_reset_backoff_steps_at_once_and_starts_from_the_first_delay() -> None:
    clock = RecordingClock()
    limiter = ItemExponentialBackoff(0.5, 30.0)
    stepper = StepBackoff(clock, limiter)
    for _ in range(4):
        stepper.failed()
    assert stepper.delay == 4.0

    stepper.reset()
    client, transport = scripted_client()
    transport.page([], "1")
    await stepper.step(Unserved(), client, QUERY)

    assert clock.slept == []  # at once
    stepper.failed()
    assert stepper.delay == 0.5

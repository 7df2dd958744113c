"""The status writer's pacing map (ChildWriter._changed_at: when each owner's status was
last written or a child of it changed) forgets owners whose entry no longer puts anything
off, so owners deleted meanwhile are not kept for the life of the process."""

from __future__ import annotations

from appstack.runtime.cache import Cache
from appstack.runtime.events import EventRecorder
from appstack.runtime.resources import CONFIG_MAP, SERVICE
from appstack.sdk.kit.children import PROGRESS_INTERVAL, ChildWriter
from tests.support.scripted_transport import scripted_client


def test_entries_that_put_nothing_off_are_swept_as_the_map_grows() -> None:
    client, _ = scripted_client()
    writer = ChildWriter(
        client, Cache(client, ["ns"]), EventRecorder(client), CONFIG_MAP, [SERVICE]
    )
    for i in range(1000):  # a wave of owners, all deleted since
        writer._mark_changed(f"ns/old-{i}", 0.0)
    assert len(writer._changed_at) <= 1000
    later = PROGRESS_INTERVAL + 1.0
    for i in range(1000):  # the next wave: the first wave's entries go, these stay
        writer._mark_changed(f"ns/new-{i}", later)
    assert not [key for key in writer._changed_at if key.startswith("ns/old-")]
    assert len(writer._changed_at) == 1000
    writer._mark_changed("ns/new-0", later + 0.5)  # a recent entry is kept, and updated
    assert writer._changed_at["ns/new-0"] == later + 0.5

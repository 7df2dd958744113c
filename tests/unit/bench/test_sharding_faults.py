"""The checks of bench/sharding_faults.py, on made-up logs and a made-up audit log: who held
a key when (the recorded patch bodies that set or removed its shard label), a key write by
a shard not holding it, a write after a resume from a freeze; and the log check of
tests/e2e/shard_harness.py it uses — overlapping reconciles, writes after an
acknowledgement, a reconcile in flight across a freeze."""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path
from typing import Any

from appstack_testbed.audit import read_audit_events
from appstack_testbed.control_plane import AUDIT_LOG
from tests.e2e.shard_harness import DRAIN, SHARD, check_logs, handover_latency
from tests.support.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import sharding_faults

NS = "faults"
T0 = 1_800_000_000.0


def _reconcile(proc: str, start: float, end: float, sent: float | None) -> dict[str, Any]:
    line = {"reconcile": f"{NS}/k", "proc": proc, "start": T0 + start, "end": T0 + end}
    return {**line, "wrote": sent is not None, "error": "", "sent": sent and T0 + sent}


def test_the_log_check_finds_overlaps_and_writes_after_an_acknowledgement() -> None:
    ack = {"event": "drain acknowledged", "key": f"/ConfigMap/{NS}/k", "proc": "a", "at": T0 + 2}
    clean = [_reconcile("a", 0, 1, 0.5), ack, _reconcile("b", 3, 4, 3.5)]
    assert check_logs(clean).figures() == {
        "reconciles": 2,
        "handovers": 1,
        "acknowledgements": 1,
        "hand_backs": 0,
        "overlapping_reconciles": 0,
        "writes_after_acknowledgement": 0,
    }
    overlapping = [_reconcile("a", 0, 1, 0.5), _reconcile("b", 0.9, 2, 1.5)]
    assert len(check_logs(overlapping).overlaps) == 1
    late = [*clean, _reconcile("a", 1.5, 3, 2.5)]  # a run begun before its acknowledgement
    assert len(check_logs(late).late_writes) == 1
    # a stopping shard's hand-back of a key is letting go of it, as an acknowledgement is
    handed = {**ack, "event": "key handed back"}
    assert check_logs([_reconcile("a", 0, 1, 0.5), handed]).figures()["hand_backs"] == 1
    assert len(check_logs([handed, _reconcile("a", 1.5, 3, 2.5)]).late_writes) == 1


def test_handover_latency_runs_from_letting_go_to_another_shards_first_reconcile() -> None:
    handed = {"event": "key handed back", "key": f"/ConfigMap/{NS}/k", "proc": "a", "at": T0 + 2}
    lines = [_reconcile("a", 0, 1, 0.5), handed, _reconcile("b", 2.5, 3, None)]
    assert handover_latency(lines, "key handed back") == [0.5]
    assert handover_latency(lines) == []  # no drain acknowledged
    assert handover_latency([_reconcile("a", 0, 1, 0.5), handed], "key handed back") == []


def test_a_reconcile_in_flight_across_a_freeze_ends_at_the_sigstop_unless_it_wrote_after() -> None:
    frozen = {"a": [(T0 + 1, T0 + 5)]}  # SIGSTOP at 1 s, SIGCONT at 5 s
    refused = [_reconcile("a", 0.9, 5.1, None), _reconcile("b", 4, 4.5, 4.2)]
    assert check_logs(refused).overlaps  # by the clock, they overlap
    found = check_logs(refused, frozen)
    assert (found.overlaps, found.late_writes) == ([], [])
    wrote_after = [_reconcile("a", 0.9, 5.1, 5.05), _reconcile("b", 4, 4.5, 4.2)]
    found = check_logs(wrote_after, frozen)
    assert len(found.late_writes) == 1
    assert len(found.overlaps) == 1


def _audit(directory: Path, entries: list[tuple[float, str, str, dict[str, Any] | None]]) -> None:
    """An audit log of patches: (seconds after T0, process, object name, labels patched)."""
    lines = []
    for at, proc, name, labels in entries:
        stamp = datetime.datetime.fromtimestamp(T0 + at, datetime.timezone.utc).isoformat()
        event: dict[str, Any] = {
            "stage": "ResponseComplete",
            "verb": "patch",
            "user": {"username": "admin"},
            "userAgent": f"tick/dev ({proc}_0123abcd)",
            "objectRef": {"resource": "configmaps", "namespace": NS, "name": name},
            "responseStatus": {"code": 200},
            "requestReceivedTimestamp": stamp,
        }
        if labels is not None:
            event["requestObject"] = {"metadata": {"labels": labels}}
        lines.append(json.dumps(event) + "\n")
    path = directory.joinpath(*AUDIT_LOG)
    path.parent.mkdir(parents=True)
    path.write_text("".join(lines))


def test_the_audit_check_compares_each_key_write_with_who_held_the_key(tmp_path: Path) -> None:
    _audit(
        tmp_path,
        [
            (1, "c", "k", {SHARD: "tick-shard-a", DRAIN: None}),  # the coordinator assigns
            (2, "a", "k-seen", None),  # a's reconcile: a holds k
            (3, "c", "k", {DRAIN: "tick-shard-a"}),  # drain asked: a still holds k
            (4, "a", "k-seen", None),
            (5, "a", "k", {SHARD: None, DRAIN: None}),  # a acknowledges
            (6, "a", "k-seen", None),  # late: a let go of k
            (7, "c", "k", {SHARD: "tick-shard-b", DRAIN: None}),
            (8, "b", "k-seen", None),
            (9, "a", "k-seen", None),  # late: k is b's
        ],
    )
    lines = [
        {"event": "shard joined", "shard": f"tick-shard-{proc}", "proc": proc} for proc in "abc"
    ]
    run = sharding_faults.Run(None, NS, None, ["k"])  # type: ignore[arg-type]
    events = read_audit_events(tmp_path, namespace=NS)
    figures, violations = sharding_faults.audit_check(events, lines, run, tmp_path)
    assert figures["key_writes_checked"] == 5
    assert figures["assignments"] == 2
    assert figures["key_writes_not_holding_the_key"] == 2
    assert figures["handovers_in_audit"] == 2  # a -> b -> a
    assert all("a wrote while" in violation for violation in violations)

    run.silent_after["b"] = (T0 + 7.5, "resumed after a SIGSTOP past its Lease")
    figures, _ = sharding_faults.audit_check(events, lines, run, tmp_path)
    assert figures["writes_after_freeze_or_delay"] == 1  # b's write at 8 s

"""Detached processes are found, stopped and reported; waits time out with a diagnosis."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from appstack_testbed.process import ManagedProcess
from appstack_testbed.waiting import WaitTimeout, condition_status, wait_for


def test_a_started_process_is_running_until_stopped_and_its_log_is_kept(tmp_path: Path) -> None:
    proc = ManagedProcess("sleeper", tmp_path)
    sleep = shutil.which("sleep")
    assert sleep
    pid = proc.start([sleep, "300"])

    assert proc.pid() == pid
    proc.stop(timeout=5)

    assert proc.pid() is None
    assert not proc.pid_file.exists()
    assert "starting:" in proc.log_tail()


def test_a_pid_file_naming_another_program_is_not_trusted(tmp_path: Path) -> None:
    proc = ManagedProcess("imposter", tmp_path)
    proc.pid_file.parent.mkdir(parents=True)
    proc.pid_file.write_text("1\n/usr/bin/not-the-init-process\n")
    assert proc.pid() is None
    proc.stop()  # must not signal pid 1


def test_wait_for_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, "ready"])
    assert wait_for(lambda: next(values), timeout=5, interval=0.001) == "ready"


def test_wait_for_times_out_naming_what_it_waited_for_and_the_last_value() -> None:
    with pytest.raises(WaitTimeout, match=r"waiting for the answer; last seen: \[\]"):
        wait_for(list, timeout=0.05, what="the answer")


def test_condition_status_reads_dicts() -> None:
    obj = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert condition_status(obj, "Ready") == "True"
    assert condition_status(obj, "Available") is None
    assert condition_status({}, "Ready") is None

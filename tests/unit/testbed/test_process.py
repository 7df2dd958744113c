"""Detached processes are found, stopped and reported."""

from __future__ import annotations

import shutil
from pathlib import Path

from appstack_testbed.process import ManagedProcess


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

"""What ``appstack status crontab/NAME`` shows of a CronTab: its Ready condition, active
runs, schedule, the newest run and how it went, and each Job kept with its result.
Declared on its registration (:data:`.CONTROLLER`) and picked from the registry by
:mod:`appstack.cli.status_kinds`.
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.util import statusview
from appstack.runtime import JOB, Client
from appstack.sdk import StatusTree


async def collect(client: Client, obj: dict[str, Any]) -> StatusTree:
    """The CronTab's schedule and runs, and its Jobs."""
    status = obj.get("status") or {}
    tree = statusview.head(obj, "Ready", f"{status.get('active', 0)} active")
    tree["schedule"] = (obj.get("spec") or {}).get("cronSpec", "")
    tree["lastRun"] = status.get("lastRun", "")
    tree["lastRunResult"] = status.get("lastRunResult", "")
    tree["lastSuccessfulTime"] = status.get("lastSuccessfulTime", "")
    for job in await statusview.labelled(client, JOB, obj):
        done = {
            c["type"]
            for c in (job.get("status") or {}).get("conditions") or []
            if c.get("status") == "True"
        }
        result = "Succeeded" if "Complete" in done else "Failed" if "Failed" in done else "Running"
        succeeded = (job.get("status") or {}).get("succeeded", 0)
        completions = (job.get("spec") or {}).get("completions", 1)
        tree["items"].append(
            {
                "name": f"Job/{job['metadata']['name']}",
                "ready": f"{succeeded}/{completions}",
                "status": result,
            }
        )
    return tree


VIEW = statusview.rows_view(collect, details=("schedule", "lastRun", "lastRunResult"))

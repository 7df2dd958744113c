"""``appstack render``: objects from a file → what the operator would apply, offline.

Validates each document with the same Pydantic models (and the same rules) the CRD schema
is generated from, so an error here is an error at admission. Used by the CLI.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from appstack.api.appservice import AppService
from appstack.api.crontab import CronTab
from appstack.controllers.appservice import desired
from appstack.controllers.crontab import desired as crontab_desired

PLACEHOLDER_UID = "00000000-0000-0000-0000-000000000000"  # assigned by the API server


class RenderError(Exception):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _location(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def render_documents(documents: list[Any]) -> list[dict[str, Any]]:
    problems: list[str] = []
    rendered: list[dict[str, Any]] = []
    for index, doc in enumerate(d for d in documents if d):
        label = f"document {index + 1}"
        kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
        if kind not in ("AppService", "CronTab"):
            problems.append(f"{label}: kind {kind!r} is not supported (AppService, CronTab)")
            continue
        name = (doc.get("metadata") or {}).get("name")
        if not name:
            problems.append(f"{label}: metadata.name: required")
            continue
        model = AppService if kind == "AppService" else CronTab
        try:
            parsed = model.model_validate(doc)
        except ValidationError as error:
            for item in error.errors():
                where = _location(item["loc"])
                message = str(item["msg"]).removeprefix("Value error, ")
                problems.append(f"{kind} {name}: {where}: {message}")
            continue
        obj = parsed.to_dict()
        obj["metadata"] = {"namespace": "default", **obj["metadata"], "uid": PLACEHOLDER_UID}
        if isinstance(parsed, CronTab):
            rendered.append(crontab_desired.cron_job(obj, parsed.spec))
            continue
        rendered.append(desired.deployment(obj, parsed.spec))
        service = desired.service(obj, parsed.spec)
        if service is not None:
            rendered.append(service)
    if problems:
        raise RenderError(problems)
    return rendered

"""``appstack render``: objects from a file → what the operator would apply, offline.

Validates each document with the same Pydantic models (and the same rules) the CRD schema
is generated from, so an error here is an error at admission. Used by the CLI.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from appstack.api.appservice import AppService
from appstack.api.appstack import AppStack
from appstack.api.crontab import CronTab
from appstack.controllers.appservice import desired
from appstack.controllers.appstack import desired as stack_desired
from appstack.controllers.children import error_message, field_path
from appstack.controllers.crontab import desired as crontab_desired

PLACEHOLDER_UID = "00000000-0000-0000-0000-000000000000"  # assigned by the API server


KINDS: dict[str, Any] = {"AppService": AppService, "AppStack": AppStack, "CronTab": CronTab}


def _stack_objects(obj: dict[str, Any], stack: AppStack) -> list[dict[str, Any]]:
    """Everything but the credentials Secrets (generated in the cluster, never printed)."""
    middleware = {m.name: m for m in stack.spec.middleware or []}
    out: list[dict[str, Any]] = []
    for mw in middleware.values():
        if mw.external is not None:
            out += stack_desired.external(obj, mw)
        else:
            out += [*stack_desired.managed_services(obj, mw), stack_desired.stateful_set(obj, mw)]
    for c in stack.spec.components:
        out += [
            o
            for o in (
                stack_desired.config_map(obj, c),
                stack_desired.deployment(obj, c, middleware),
                stack_desired.component_service(obj, c),
            )
            if o is not None
        ]
    return out


class RenderError(Exception):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def render_documents(documents: list[Any]) -> list[dict[str, Any]]:
    problems: list[str] = []
    rendered: list[dict[str, Any]] = []
    for index, doc in enumerate(d for d in documents if d):
        label = f"document {index + 1}"
        kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
        if isinstance(doc, dict) and not str(doc.get("apiVersion", "")).startswith("appstack.dev/"):
            rendered.append(doc)  # an ordinary object in the same file: applied as it is
            continue
        if kind not in KINDS:
            problems.append(f"{label}: kind {kind!r} is not supported ({', '.join(KINDS)})")
            continue
        name = (doc.get("metadata") or {}).get("name")
        if not name:
            problems.append(f"{label}: metadata.name: required")
            continue
        model = KINDS[kind]
        try:
            parsed = model.model_validate(doc)
        except ValidationError as error:
            for item in error.errors():
                where = field_path(item["loc"])
                message = error_message(item)
                problems.append(f"{kind} {name}: {where}: {message}")
            continue
        obj = parsed.to_dict()
        obj["metadata"] = {"namespace": "default", **obj["metadata"], "uid": PLACEHOLDER_UID}
        if isinstance(parsed, CronTab):
            rendered.append(crontab_desired.cron_job(obj, parsed.spec))
            continue
        if isinstance(parsed, AppStack):
            rendered += _stack_objects(obj, parsed)
            continue
        rendered.append(desired.deployment(obj, parsed.spec))
        service = desired.service(obj, parsed.spec)
        if service is not None:
            rendered.append(service)
    if problems:
        raise RenderError(problems)
    return rendered

"""The SDK's public API (appstack/sdk/__init__.py) is what its ``__all__`` says, exactly, as
httpx keeps its own: every name listed resolves, has a docstring where it is a class or a
function, lives in one home; importing the package loads nothing heavy; and an operator
built only on the SDK and the runtime loads none of appstack's kinds or controllers."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from appstack import sdk


def test_all_is_exact_and_every_name_resolves_with_a_docstring() -> None:
    assert len(sdk.__all__) == len(set(sdk.__all__))
    assert set(sdk.__all__) == set(sdk._HOMES)  # each name and its one home
    undocumented = []
    for name in sdk.__all__:
        value = getattr(sdk, name)
        if (inspect.isclass(value) or inspect.isfunction(value)) and not inspect.getdoc(value):
            undocumented.append(name)
    assert undocumented == []
    public = {n for n in dir(sdk) if not n.startswith("_") and n not in ("annotations",)}
    modules = {n for n in public if inspect.ismodule(getattr(sdk, n))}
    assert public - modules - {"TYPE_CHECKING", "Any", "importlib"} == set(sdk.__all__)
    # no public name is also a submodule's name: `from appstack.sdk import x` is never
    # the module once someone imported appstack.sdk.x
    submodules = {p.stem for p in Path(sdk.__file__).parent.iterdir() if p.suffix == ".py"}
    assert not submodules & set(sdk.__all__)


def _loaded(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return set(out.split())


def test_importing_the_sdk_loads_nothing_until_a_name_is_used() -> None:
    loaded = _loaded("import appstack.sdk")
    assert not {m for m in loaded if m.startswith(("appstack.runtime", "pydantic", "aiohttp"))}


def test_an_operator_on_the_sdk_loads_none_of_appstacks_kinds_or_controllers() -> None:
    code = """
from pydantic import Field
from appstack.sdk import (
    CustomObject, KindReconciler, KubeModel, OperatorIdentity, Registration, crd,
    custom_kind, derived_rules, operator_command, run_operator,
)
from appstack.runtime import Builder, Client, Manager, Resource
class GreetingSpec(KubeModel):
    message: str = Field(min_length=1)
class GreetingStatus(KubeModel):
    said: str | None = None
@custom_kind(group="tutorial.example.com", plural="greetings")
class Greeting(CustomObject):
    spec: GreetingSpec
    status: GreetingStatus | None = None
crd(Greeting.KIND)
derived_rules(Greeting.KIND, owns=[Resource("", "v1", "ConfigMap", "configmaps")])
import appstack.sdk.operator, appstack.sdk.kit.registration
"""
    loaded = _loaded(code)
    ours = {
        m
        for m in loaded
        if m.startswith(("appstack.api", "appstack.controllers", "appstack.manifests"))
        or m in ("appstack.operator", "appstack.cli")
    }
    assert ours == set()

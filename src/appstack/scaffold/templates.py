"""The files ``appstack init`` and ``appstack create api`` write (pure: text from a
:class:`~appstack.scaffold.project.Project`). A thin scaffold — what the operator does
lives in appstack's SDK, imported by the project, not in copied text: a kind's module
declares the kind, a controller module says what the kind makes (a pure function) and the
status it writes, ``__main__`` is one call into the SDK's assembly.

Every template names the scaffold markers it keeps (``# +appstack:scaffold:...``): later
commands insert only there (:mod:`.markers`), so the files a user edited stay as they are.
"""

# ruff: noqa: E501 - the templates hold the files as written (a Makefile, help lines)
from __future__ import annotations

import datetime
import textwrap
from pathlib import Path

from appstack.scaffold.project import Project, Resource
from appstack.sdk import OperatorIdentity

MARK_CONTROLLERS = "# +appstack:scaffold:controllers"
MARK_KINDS = "# +appstack:scaffold:kinds"
MARK_SAMPLES = "# +appstack:scaffold:samples"


def header(project: Project, comment: str = "#") -> str:
    """The license header of a generated source file (none with ``--license none``)."""
    if project.license == "none":
        return ""
    owner = project.owner or "The " + project.project_name + " authors"
    year = datetime.date.today().year
    lines = [
        f"Copyright {year} {owner}.",
        "",
        'Licensed under the Apache License, Version 2.0 (the "License");',
        "you may not use this file except in compliance with the License.",
        "You may obtain a copy of the License at",
        "",
        "    http://www.apache.org/licenses/LICENSE-2.0",
        "",
        "Unless required by applicable law or agreed to in writing, software",
        'distributed under the License is distributed on an "AS IS" BASIS,',
        "WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.",
        "See the License for the specific language governing permissions and",
        "limitations under the License.",
    ]
    return "".join(f"{comment} {line}".rstrip() + "\n" for line in lines) + "\n"


# ------------------------------------------------------------------------------- init
def pyproject(project: Project) -> str:
    return f'''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{project.project_name}"
version = "0.1.0"
description = "The {project.project_name} operator, built on appstack's SDK."
requires-python = ">=3.10"
dependencies = ["appstack"]

[project.optional-dependencies]
# appstack-testbed: the local cluster and its pytest plugin (appstack's testbed/ directory).
# appstack[cel]: the CRDs' CEL rules evaluated in your tests as the API server evaluates them.
dev = ["appstack[cel]", "appstack-testbed", "pytest>=8", "ruff>=0.6", "mypy>=1.10"]

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]
# the package from this checkout, whatever else the environment has installed
pythonpath = ["src"]
addopts = "-p no:cacheprovider"

[tool.ruff]
line-length = 100
src = ["src", "tests"]

[tool.ruff.lint]
select = ["E", "F", "W", "I", "B", "UP"]

[tool.mypy]
files = ["src"]
strict = true
'''


def makefile(project: Project, appstack_source: str) -> str:
    name = project.project_name
    pkg = project.package
    return f"""# {name}: an operator built on appstack's SDK. `make help` lists the targets.
# Tools come from PyPI into $(VENV), appstack from APPSTACK_SOURCE (a checkout of appstack)
# or from wheels in APPSTACK_WHEELS (appstack is not on a package index yet); see README.md.

# Image URL to use all building/pushing image targets
IMG ?= controller:latest
APPSTACK_SOURCE ?= {appstack_source}
APPSTACK_WHEELS ?=
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
APPSTACK := $(VENV)/bin/appstack
KUBECTL ?= kubectl
CONTAINER_TOOL ?= docker
# The local cluster `make setup-test-e2e` starts (appstack's test bed)
E2E_CLUSTER ?= {name}-test-e2e
# The image's Python and platform (the Dockerfile's base: Debian 12, its python3 3.11),
# which the dependency wheels `make build` downloads are for; arm64: IMAGE_ARCH=aarch64.
IMAGE_PYTHON ?= 3.11
IMAGE_ARCH ?= x86_64
IMAGE_WHEEL_PLATFORMS ?= $(foreach v,2_17 2_28 2_34,manylinux_$(v)_$(IMAGE_ARCH)) manylinux2014_$(IMAGE_ARCH)
# `make run` flags. The operator acts only in namespaces labelled {project.domain}/enabled=true
# (README.md, "Namespaces"); RUN_ARGS=--enable-all-namespaces makes it act in every one.
RUN_ARGS ?=
export PYTHONPATH := $(CURDIR)/src

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
\t@awk 'BEGIN {{FS = ":.*##"; printf "\\nUsage:\\n  make \\033[36m<target>\\033[0m\\n"}} /^[a-zA-Z_0-9-]+:.*?##/ {{ printf "  \\033[36m%-18s\\033[0m %s\\n", $$1, $$2 }} /^##@/ {{ printf "\\n\\033[1m%s\\033[0m\\n", substr($$0, 5) }} ' $(MAKEFILE_LIST)

##@ Development

$(VENV)/.{name}-installed: pyproject.toml
\ttest -x $(PY) || $(PYTHON) -m venv $(VENV)
\t$(PY) -m pip install -q --upgrade pip
\tif [ -n "$(APPSTACK_WHEELS)" ]; then \\
\t  $(PY) -m pip install -q --find-links "$(APPSTACK_WHEELS)" "appstack[cel]" appstack-testbed; \\
\telse \\
\t  $(PY) -m pip install -q -e "$(APPSTACK_SOURCE)[cel]" -e "$(APPSTACK_SOURCE)/testbed"; \\
\tfi
\t$(PY) -m pip install -q -e '.[dev]'
\ttouch $@

.PHONY: venv
venv: $(VENV)/.{name}-installed ## Create $(VENV) with appstack, the test bed and the dev tools.

.PHONY: manifests
manifests: venv ## Generate the CRDs, RBAC and the install (config/) from the code.
\t$(APPSTACK) generate manifests

.PHONY: generate
generate: manifests ## Python models need no generated code: the same as manifests.

.PHONY: fmt
fmt: venv ## Format the code (ruff format).
\t$(VENV)/bin/ruff format src tests

.PHONY: vet
vet: venv ## Type-check the code (mypy).
\t$(VENV)/bin/mypy

.PHONY: lint
lint: venv ## Lint and check the formatting (ruff).
\t$(VENV)/bin/ruff check src tests
\t$(VENV)/bin/ruff format --check src tests

.PHONY: lint-fix
lint-fix: venv ## Fix what ruff can fix, then format.
\t$(VENV)/bin/ruff check --fix src tests
\t$(VENV)/bin/ruff format src tests

.PHONY: test
test: manifests vet ## Unit and controller tests (a real control plane: the local cluster, or APPSTACK_TEST_KUBECONFIG).
\t$(PY) -m pytest tests --ignore=tests/e2e

.PHONY: test-unit
test-unit: manifests ## Unit tests with no cluster: pure functions, and the controllers in memory.
\t$(PY) -m pytest tests --ignore=tests/e2e --ignore-glob='tests/test_*_controller.py'

.PHONY: setup-test-e2e
setup-test-e2e: venv ## Start the local cluster for the e2e tests (a real node as root).
\t$(APPSTACK) cluster up --name $(E2E_CLUSTER)

.PHONY: test-e2e
test-e2e: setup-test-e2e manifests ## Build the image, deploy it on the local cluster's real node, check it.
\tAPPSTACK_CLUSTER=$(E2E_CLUSTER) APPSTACK_TEST_CLUSTER=$(E2E_CLUSTER) $(PY) -m pytest tests/e2e
\t$(MAKE) cleanup-test-e2e

.PHONY: cleanup-test-e2e
cleanup-test-e2e: venv ## Stop the local e2e cluster.
\t$(APPSTACK) cluster down --name $(E2E_CLUSTER)

##@ Build

.PHONY: build
build: manifests ## Build into dist/ every wheel the image installs: this project's, appstack's, their dependencies'.
\tmkdir -p dist
\trm -f dist/*.whl
\t$(PY) -m pip wheel -q --no-deps -w dist .
\tif [ -n "$(APPSTACK_WHEELS)" ]; then \\
\t  cp "$(APPSTACK_WHEELS)"/appstack-[0-9]*.whl dist/; \\
\telse \\
\t  $(PY) -m pip wheel -q --no-deps -w dist "$(APPSTACK_SOURCE)"; \\
\tfi
\t$(PY) -m pip download -q -d dist --only-binary=:all: --implementation cp \\
\t  --python-version $(IMAGE_PYTHON) $(foreach tag,$(IMAGE_WHEEL_PLATFORMS),--platform $(tag)) \\
\t  dist/*.whl

.PHONY: run
run: manifests ## Run the operator from your host, against the current kubeconfig.
\t$(PY) -m {pkg} $(RUN_ARGS)

.PHONY: docker-build
docker-build: build ## Build the image with Docker (the Dockerfile; dist/ has the wheels).
\t$(CONTAINER_TOOL) build -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the image with Docker.
\t$(CONTAINER_TOOL) push $(IMG)

.PHONY: image-oci
image-oci: manifests ## Build the image without a daemon (root; appstack's test bed) into the local cluster's registry.
\t$(APPSTACK) cluster image --project . --tag $(IMG)

.PHONY: build-installer
build-installer: manifests ## Write dist/install.yaml: kustomize's build of config/default with IMG.
\tmkdir -p dist
\t$(APPSTACK) edit --image $(IMG)
\t$(KUBECTL) kustomize config/default > dist/install.yaml

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests ## Install the CRDs into the cluster of the current kubeconfig.
\t$(KUBECTL) apply --server-side --force-conflicts -k config/crd

.PHONY: uninstall
uninstall: manifests ## Uninstall the CRDs (and every object of them). ignore-not-found=true to ignore missing ones.
\t$(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -k config/crd

.PHONY: deploy
deploy: manifests ## Deploy the operator (IMG) to the cluster of the current kubeconfig: config/default, with kustomize.
\t$(APPSTACK) edit --image $(IMG)
\t$(KUBECTL) apply --server-side --force-conflicts -k config/default

.PHONY: undeploy
undeploy: venv ## Undeploy the operator. ignore-not-found=true to ignore missing objects.
\t$(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -k config/default
"""


def dockerfile(project: Project) -> str:
    return f"""# The {project.project_name} operator image: `make docker-build IMG=...` (Docker), or
# `make image-oci IMG=...` without a daemon (appstack's test bed, root). `make build` puts
# every wheel in dist/: this project's, appstack's (from APPSTACK_SOURCE or APPSTACK_WHEELS)
# and their dependencies' for the image's Python. The image installs from those alone
# (--no-index): no package index is asked for anything, appstack's name least of all (it is
# on none, and whoever registered it there would be installed).
FROM debian:12.15-slim
RUN apt-get update \\
 && apt-get install -y --no-install-recommends python3 python3-venv \\
 && rm -rf /var/lib/apt/lists/*
COPY dist/*.whl /wheels/
RUN python3 -m venv /opt/operator \\
 && /opt/operator/bin/pip install --no-cache-dir --no-index --find-links /wheels {project.project_name} \\
 && rm -rf /wheels
ENV PATH=/opt/operator/bin:$PATH
USER 65532:65532
ENTRYPOINT ["python", "-m", "{project.package}"]
"""


GITIGNORE = """.venv/
__pycache__/
*.egg-info/
dist/
build/
.mypy_cache/
.ruff_cache/
.pytest_cache/
"""

DOCKERIGNORE = """.venv/
.git/
__pycache__/
*.egg-info/
.mypy_cache/
.ruff_cache/
tests/
"""


def _identity(project: Project) -> OperatorIdentity:
    """The identity ``identity.py`` declares (:func:`identity`)."""
    return OperatorIdentity(project=project.project_name, domain=project.domain)


def readme(project: Project) -> str:
    name, pkg = project.project_name, project.package
    enabled, privileged, may_write = _identity(project).opt_in_labels
    return f"""# {name}

An operator built on [appstack](https://github.com/appstack/appstack)'s SDK: its kinds are
Python models (`src/{pkg}/api/`), its controllers pure functions of what each object wants
plus the status they write (`src/{pkg}/controllers/`), and everything else — informers,
server-side apply, conditions, Events, leader election, secure metrics, the CRD check — is
appstack's (`python -m {pkg} --help`).

## Getting appstack

appstack is not on a package index yet: `make venv` installs it from a checkout
(`APPSTACK_SOURCE`, the one `appstack init` ran from by default) or from wheels
(`make venv APPSTACK_WHEELS=/path/to/wheels`, e.g. built with `pip wheel --no-deps -w wheels
<checkout> <checkout>/testbed`). Everything else comes from PyPI.

## Develop

```bash
make manifests        # config/: the CRDs, RBAC and admission policies, generated from the code
make test-unit        # unit tests with no cluster: the controllers in memory (Python alone)
make test             # unit and controller tests against a real control plane
make lint
```

In `config/`, `crd/`, `rbac/` and `admission/` are generated from the code ("Do not edit":
`make manifests` rewrites them, a test fails when they drift); `manager/`, `default/` and
`prometheus/` were scaffolded once and are yours — the Deployment's resources, env and
flags, kustomize patches — `make manifests` writes them only if missing. `appstack edit`
changes in them only what its settings decide (the image, `--namespaced`,
`--enable-all-namespaces` flags).

`make test-unit` needs no cluster, no Go and no root: the pure functions' tests, and each
controller run in memory (`tests/test_<kind>_in_memory.py`: `appstack.sdk.InMemoryOperator`,
the operator's own client, cache and reconcilers against appstack's in-memory API server,
which keeps versions, server-side apply, status, finalizers and owners as the API server
does, and has no admission: the model's validation is what it checks).

`make test` runs the controller tests on appstack's local cluster (started on first use,
built once into `~/.cache/appstack`), or on an existing cluster:
`APPSTACK_TEST_KUBECONFIG=~/.kube/config make test`. They run the operator under the
generated RBAC (`config/rbac/role.yaml`): a rule it is missing fails a test.

## Run it

On the cluster of your current kubeconfig:

```bash
make install          # the CRDs
make run              # the operator from this checkout, in the foreground
kubectl label namespace default {enabled}=true   # let it act in this namespace
kubectl apply -k config/samples/
make uninstall        # the CRDs, and every object of them
```

As a pod: `make docker-build docker-push IMG=<registry>/{name}:tag` (or `make image-oci`
without a daemon, into the local cluster's registry), then `make deploy IMG=...`. The
Dockerfile installs only the wheels `make build` puts in `dist/` (this project's,
appstack's and their dependencies', for the image's Python), with no package index;
`make deploy` is `kubectl apply -k config/default` with the image set in
`config/manager/kustomization.yaml` (`appstack edit --image`, kubebuilder's `kustomize edit
set image`); `make undeploy` removes it. `make build-installer IMG=...` writes kustomize's
build to `dist/install.yaml`: the CRDs, the RBAC, the Deployment and the admission policies
(`config/admission/`), in one apply.
`make test-e2e` does all of it on the local cluster's real node.

## Namespaces

The operator acts only in the namespaces a platform team enabled, labelled
`{enabled}=true`; elsewhere an object of its kinds gets `Ready=False`, reason
`NamespaceNotEnabled` (its message says the command), and nothing else. To enable one:

```bash
kubectl label namespace NAME {enabled}=true
```

Who may: cluster administrators, or whoever holds the generated ClusterRole
`{name}-namespace-enabler` (verb `enable` on `namespaces.{project.domain}`; bind it beside
a role that may patch namespaces). The policy `{name}-namespace-labels` refuses anyone
else setting, changing or removing `{enabled}`, `{privileged}` or `{may_write}`, so
whoever may create namespaces cannot open one to the operator themselves.

Every namespace, on purpose (a single-team cluster): `appstack edit --enable-all-namespaces`
then `make manifests` (the Deployment gets `--enable-all-namespaces`, the policies stop
asking for the label), and `make run RUN_ARGS=--enable-all-namespaces`. Anyone who may
create the operator's kinds anywhere then gets its writes there.

## What the operator's token may do

Its RBAC (`config/rbac/role.yaml`, generated from what the controllers declare): read and
watch its kinds, patch their status; create, patch and delete the kinds its controllers
own, read those they watch; Events; read namespaces; TokenReviews and
SubjectAccessReviews (who may scrape `/metrics`); its Lease, by name, in its own namespace
(`leader_election_role.yaml`); and `subject-to` on `admissionguards.{project.domain}`, which
nothing calls: the marker by which the policies below recognise its token. RBAC cannot say
"only in some namespaces" or "only what the operator made", so the install's admission
policies (`config/admission/`, generated by appstack's SDK) bound every request made with
that token — a stolen token included:

* `{name}-operator-writes` — what it writes (its children) only in enabled namespaces;
  never in `kube-system`, `kube-public` or `kube-node-lease` unless also labelled
  `{may_write}=true`; a created object controlled by one of its kinds and labelled
  `app.kubernetes.io/managed-by={name}`, an update or delete only of an object already so;
  no Secret of type `kubernetes.io/service-account-token`; pods and pod templates at the
  Pod Security baseline unless the namespace is labelled `{privileged}=true`, never naming
  their node; Services without `externalIPs` or `loadBalancerIP`; no finalizer but its
  own; no ConfigMap or Secret made immutable;
* `{name}-operator-kinds` — of its kinds' objects, only the finalizers and the status
  (never spec, labels, annotations or owners);
* `{name}-operator-events` — Events only in enabled namespaces, about its kinds' objects
  in the same namespace;
* `{name}-operator-lease-duration` — its Lease held 1 to 300 s at most;
* `{name}-namespace-labels` — the opt-in labels above, for every requester;
* `{name}-baseline` (when a kind asks for a `securityContext` or pod annotations) —
  everyone's objects of its kinds at the Pod Security baseline.

Anything else asked with the operator's token is refused, the message naming the rule and
the fix. What stays: in an enabled namespace the token writes what its controllers could
(their children), and it reads what its RBAC lets it read. The policies bound the token,
not cluster administrators: `make run` with your own kubeconfig is not held to them.
"""


def package_init(project: Project) -> str:
    return (
        header(project)
        + f'''"""The {project.project_name} operator: its kinds (``api``), its controllers
(``controllers``) and its identity (``identity``); ``python -m {project.package}`` runs it."""

__version__ = "0.1.0"
'''
    )


def package_main(project: Project) -> str:
    pkg = project.package
    return (
        header(project)
        + f'''"""Run the {project.project_name} operator: ``python -m {pkg} --help`` lists the flags."""

from __future__ import annotations

from appstack.sdk import Registration, operator_command

from {pkg} import __version__
from {pkg}.identity import IDENTITY


def controllers() -> list[Registration]:
    """Every controller, imported when the operator starts."""
    from {pkg}.controllers import CONTROLLERS

    return CONTROLLERS


main = operator_command(controllers, IDENTITY, version=__version__)

if __name__ == "__main__":
    main()
'''
    )


def identity(project: Project) -> str:
    return (
        header(project)
        + f'''"""Who the operator is: every name it is known by (field manager, Lease, Events, labels,
the install's namespace) comes from this one value."""

from appstack.sdk import OperatorIdentity

IDENTITY = OperatorIdentity(project="{project.project_name}", domain="{project.domain}")
'''
    )


def api_init(project: Project) -> str:
    return (
        header(project)
        + f'''"""The {project.project_name} operator's kinds, one module per kind under its version."""
'''
    )


def version_init(project: Project, version: str) -> str:
    return (
        header(project)
        + f'''"""The kinds of API version {version}."""
'''
    )


def controllers_init(project: Project) -> str:
    return (
        header(project)
        + f'''"""Every controller of the operator (``CONTROLLERS``) and every kind it serves (``KINDS``),
by module: ``appstack create api`` adds to the lists at the markers (and you may too)."""

from __future__ import annotations

import importlib

from appstack.sdk import CustomKind, Registration

#: The modules of the controllers (each defines ``CONTROLLER``).
CONTROLLER_MODULES: list[str] = [
    {MARK_CONTROLLERS}
]
#: The kinds' models, as ``module:Class``.
KIND_MODELS: list[str] = [
    {MARK_KINDS}
]

CONTROLLERS: list[Registration] = [
    importlib.import_module(module).CONTROLLER for module in CONTROLLER_MODULES
]
KINDS: list[CustomKind] = [
    getattr(importlib.import_module(module), model).KIND
    for module, _, model in (entry.partition(":") for entry in KIND_MODELS)
]
'''
    )


# ---------------------------------------------------------------------------- create api
def kind_module(project: Project, resource: Resource) -> str:
    kind = resource.kind
    scope = "" if resource.namespaced else "\n    namespaced=False,"
    return (
        header(project)
        + f'''"""The {kind} kind ({resource.full_group}/{resource.version}): its spec, its status, declared
once — the CRD (``make manifests``) is generated from these models."""

from __future__ import annotations

from appstack.sdk import AGE, READY_REASON, Condition, CustomObject, KubeModel, custom_kind
from pydantic import Field

GROUP = "{resource.full_group}"
VERSION = "{resource.version}"


class {kind}Spec(KubeModel):
    """What each {kind} asks for. Add your fields here (camelCase on the wire)."""

    foo: str | None = Field(
        default=None, max_length=256, description="An example field: what the child holds."
    )


class {kind}Status(KubeModel):
    """The observed state, written by the controller."""

    observed_generation: int | None = Field(
        default=None, description="The generation the controller last acted on."
    )
    conditions: list[Condition] | None = Field(
        default=None, description="Ready, by the API conventions."
    )


@custom_kind(
    group=GROUP,
    version=VERSION,
    plural="{resource.plural}",{scope}
    printer_columns=(READY_REASON, AGE),
)
class {kind}(CustomObject):
    """{kind} is the Schema for the {resource.plural} API."""

    spec: {kind}Spec
    status: {kind}Status | None = None
'''
    )


def controller_module(project: Project, resource: Resource) -> str:
    kind, module, pkg = resource.kind, resource.module_name, project.package
    api = f"{pkg}.api.{resource.version}.{module}"
    return (
        header(project)
        + f'''"""The {kind} controller: each {kind} keeps a ConfigMap of its spec (an example child:
make :func:`desired` return what your kind should make) and writes ``Ready`` and
``observedGeneration``. Level-based: every reconcile reads the object from the cache and
makes its children so with server-side apply (only when something differs)."""

from __future__ import annotations

from appstack.runtime import CONFIG_MAP, Result
from appstack.sdk import (
    KindReconciler,
    KubeObject,
    Manifest,
    Problem,
    Registration,
    child_labels,
    child_metadata,
    condition,
    now_rfc3339,
    previous_conditions,
)

from {api} import {kind}, {kind}Spec, {kind}Status
from {pkg}.identity import IDENTITY


def desired(obj: KubeObject, spec: {kind}Spec) -> list[Manifest]:
    """The children a {kind} wants (pure: unit-tested without a cluster)."""
    name = obj["metadata"]["name"]
    labels = child_labels(name, "{module}", IDENTITY.managed_by)
    return [
        {{
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": child_metadata(obj, f"{{name}}-{module}", labels),
            "data": {{"foo": spec.foo or ""}},
        }}
    ]


def status(obj: KubeObject, problem: Problem | None) -> {kind}Status:
    """``Ready`` (with the problem, if any) and the generation acted on."""
    generation = obj["metadata"].get("generation")
    ready = condition(
        "Ready",
        "False" if problem else "True",
        problem.reason if problem else "Reconciled",
        problem.message if problem else "every child is as wanted",
        generation=generation,
        previous=previous_conditions(obj),
        now=now_rfc3339(),
    )
    return {kind}Status(observed_generation=generation, conditions=[ready])


class {kind}Reconciler(KindReconciler[{kind}Spec]):
    """{kind} → its children, and status."""

    kind = {kind}.KIND
    owns = (CONFIG_MAP,)

    def invalid_status(self, obj: KubeObject, problem: Problem) -> {kind}Status:
        return status(obj, problem)

    async def apply(self, obj: KubeObject, spec: {kind}Spec) -> Result | None:
        _, problems = await self.writer.sync_all(obj, desired(obj, spec))
        for problem in problems:
            await self.writer.report(obj, problem)
        await self.writer.write_status(obj, status(obj, problems[0] if problems else None))
        # A child the API server refused is tried again, with backoff: a quota, an admission
        # webhook or a CRD installed a moment ago may admit it later.
        return Result(requeue=True) if problems else None


CONTROLLER = Registration(name="{module}", reconciler={kind}Reconciler, children=desired)
'''
    )


def _api_version(resource: Resource) -> str:
    group = resource.full_group
    return f"{group}/{resource.version}" if group else resource.version


def _wrapped(text: str, indent: str = "") -> str:
    """``text`` (a docstring with its quotes) filled to the generated project's lines."""
    return textwrap.fill(
        text,
        width=92,
        initial_indent=indent,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=False,
    )


def _call(target: str, function: str, args: list[str]) -> str:
    """``target = function(args)`` as ruff format writes it (the project's ``make lint``)."""
    line = f"{target} = {function}({', '.join(args)})"
    if len(line) <= 100:
        return line
    inner = f"    {', '.join(args)}"
    if len(inner) <= 100:
        return f"{target} = {function}(\n{inner}\n)"
    return f"{target} = {function}(\n" + "".join(f"    {arg},\n" for arg in args) + ")"


def object_controller_module(project: Project, resource: Resource) -> str:
    """The controller of a kind the project does not declare (``create api --group core
    --no-resource``, ``--external-api-domain``): an ``ObjectReconciler`` of it."""
    kind, module, plural = resource.kind, resource.module_name, resource.plural
    if resource.external:
        whose = (
            f"{resource.full_group}'s: another project's CRD (until it is installed, the "
            "operator waits at start, not ready)"
        )
    else:
        whose = "Kubernetes' own: every cluster serves it"
    about = _wrapped(
        f'"""The {kind} controller. {kind} ({_api_version(resource)}) is {whose}; not a kind '
        "of this project, so its reconciler is an ``ObjectReconciler`` (``appstack create "
        f"api --no-resource``): ``apply()`` is called for every {kind} in a namespace "
        "enabled for the operator, on every change and every resync. What it declares is "
        "what it is granted: ``make manifests`` derives the RBAC (now: read and watch "
        f"{plural}) and the admission policies from ``primary``, ``selector``, ``owns``, "
        '``writes``, ``watches`` and ``finalizer`` (appstack\'s docs/any-kind.md)."""'
    )
    args = [f'"{resource.full_group}"', f'"{resource.version}"', f'"{kind}"', f'"{plural}"']
    primary = _call(
        "PRIMARY", "Resource", [*args, *([] if resource.namespaced else ["namespaced=False"])]
    )
    registration = _call(
        "CONTROLLER", "Registration", [f'name="{module}"', f"reconciler={kind}Reconciler"]
    )
    if resource.namespaced:
        identity = f"\nfrom {project.package}.identity import IDENTITY\n"
        doc = _wrapped(
            f'"""{kind} -> what the operator does for it. The scaffold\'s example: a Normal '
            "Event ``Observed`` about it (``kubectl describe`` shows it); make ``apply`` do "
            'yours."""',
            "    ",
        )
        example = f"""

def note(obj: dict[str, Any]) -> str:
    \"\"\"What the example Event says about ``obj`` (pure: tested without a cluster).\"\"\"
    return f"{kind} {{obj['metadata']['name']}} observed by {{IDENTITY.project}}"


class {kind}Reconciler(ObjectReconciler):
{doc}

    primary = PRIMARY
    # Only the labelled ones (the API server filters; the others are never cached):
    # selector = "{project.domain}/watched=true"

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        self.writer.recorder.record(obj, "Normal", "Observed", note(obj))
        return None
"""
    else:
        identity = ""
        example = f"""

class {kind}Reconciler(ObjectReconciler):
    \"\"\"{kind} -> what the operator does for it.\"\"\"

    primary = PRIMARY

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        # what the operator does for each {kind} (idempotent: called again and again)
        return None
"""
    return (
        header(project)
        + f"""{about}

from __future__ import annotations

from typing import Any

from appstack.runtime import Resource, Result
from appstack.sdk import ObjectReconciler, Registration
{identity}
#: The kind it reconciles, as the API server serves it.
{primary}
{example}

{registration}
"""
    )


def sample(project: Project, resource: Resource) -> str:
    return f"""apiVersion: {resource.full_group}/{resource.version}
kind: {resource.kind}
metadata:
  name: {resource.kind.lower()}-sample
spec:
  foo: bar
"""


def sample_file(resource: Resource) -> str:
    """kubebuilder's sample name: ``<group>_<version>_<kind>.yaml``."""
    group = resource.group or resource.domain.split(".")[0]
    return f"config/samples/{group}_{resource.version}_{resource.kind.lower()}.yaml"


def samples_kustomization() -> str:
    return f"""## Append samples of your project ##
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
{MARK_SAMPLES}
"""


# ---------------------------------------------------------------------------------- tests
def test_conftest(project: Project) -> str:
    return (
        header(project)
        + '''"""The tests' shared fixtures: the project's directory, and an operator under test
(appstack's test bed: ``appstack_testbed.operators``)."""

from __future__ import annotations

from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def project_dir() -> Path:
    return PROJECT_DIR
'''
    )


def test_desired(project: Project, resource: Resource) -> str:
    kind, module, pkg = resource.kind, resource.module_name, project.package
    return (
        header(project)
        + f'''"""The {kind}'s desired state, without a cluster (pure functions: microseconds)."""

from __future__ import annotations

from {pkg}.api.{resource.version}.{module} import {kind}Spec
from {pkg}.controllers.{module} import desired, status


def _obj() -> dict:
    return {{
        "apiVersion": "{resource.full_group}/{resource.version}",
        "kind": "{kind}",
        "metadata": {{"name": "sample", "namespace": "ns", "uid": "u-1", "generation": 3}},
    }}


def test_a_{module}_wants_one_config_map_it_controls() -> None:
    (child,) = desired(_obj(), {kind}Spec(foo="bar"))
    assert child["metadata"]["name"] == "sample-{module}"
    assert child["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert child["data"] == {{"foo": "bar"}}


def test_the_status_says_ready_for_the_generation() -> None:
    written = status(_obj(), None)
    assert written.observed_generation == 3
    assert written.conditions is not None
    assert written.conditions[0].status == "True"
'''
    )


def test_controller(project: Project, resource: Resource) -> str:
    kind, module, pkg = resource.kind, resource.module_name, project.package
    resource_path = f"{pkg}.api.{resource.version}.{module}"
    return (
        header(project)
        + f'''"""The {kind} controller against a real control plane — the test bed's local cluster, or
``APPSTACK_TEST_KUBECONFIG`` — run as ``python -m {pkg}`` under the generated RBAC
(``config/rbac/role.yaml``, bound to a ServiceAccount of the test's namespace): a rule the
operator is missing fails here. The test's namespace is enabled for the operator first
(labelled ``{project.domain}/enabled=true``, as a platform team would: it acts nowhere
else). The sample (``config/samples``) gets ``Ready`` for its generation; a deleted child
is restored."""

from __future__ import annotations

from pathlib import Path

import yaml
from appstack_testbed.operators import OperatorUnderTest

from {resource_path} import {kind}

SAMPLE = "{sample_file(resource)}"


def test_the_sample_gets_ready_and_a_deleted_child_comes_back(
    kubeconfig: Path, namespace: str, project_dir: Path
) -> None:
    sample = yaml.safe_load((project_dir / SAMPLE).read_text())
    with OperatorUnderTest(project_dir, kubeconfig, namespace) as operator:
        created = operator.create({kind}.KIND.resource, sample)
        generation = created["metadata"]["generation"]
        operator.wait_ready({kind}.KIND.resource, sample["metadata"]["name"], generation)
        child = f"{{sample['metadata']['name']}}-{module}"
        first = operator.wait_child("configmaps", child)
        operator.delete_child("configmaps", child)
        again = operator.wait_child("configmaps", child, other_than=first["metadata"]["uid"])
        assert again["data"] == first["data"]
'''
    )


def test_in_memory(project: Project, resource: Resource) -> str:
    kind, module, pkg = resource.kind, resource.module_name, project.package
    resource_path = f"{pkg}.api.{resource.version}.{module}"
    return (
        header(project)
        + f'''"""The {kind} controller with no cluster (``make test-unit``): the operator's controllers
run in this process against appstack's in-memory API server (``appstack.sdk.InMemoryOperator``:
the real client, cache and reconcilers; no admission, so the model's own validation is what
runs). The sample gets ``Ready`` for its generation and its ConfigMap; a deleted child
comes back. The same behaviour on a real control plane: ``test_{module}_controller.py``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml
from appstack.runtime import CONFIG_MAP
from appstack.sdk import InMemoryOperator

from {resource_path} import {kind}
from {pkg}.controllers import CONTROLLERS
from {pkg}.identity import IDENTITY

SAMPLE = "{sample_file(resource)}"
RESOURCE = {kind}.KIND.resource


def _ready(obj: dict[str, Any] | None, generation: int) -> bool:
    conditions = ((obj or {{}}).get("status") or {{}}).get("conditions") or []
    return any(
        c["type"] == "Ready" and c["status"] == "True" and c.get("observedGeneration") == generation
        for c in conditions
    )


async def _scenario(sample: dict[str, Any]) -> None:
    sample["metadata"]["namespace"] = "default"
    name = sample["metadata"]["name"]
    async with InMemoryOperator(CONTROLLERS, IDENTITY) as running:
        created = await running.client.create(RESOURCE, sample)
        generation = created["metadata"]["generation"]

        async def ready() -> bool:
            return _ready(await running.get(RESOURCE, name, "default"), generation)

        await running.until(ready)
        child = f"{{name}}-{module}"
        first = await running.until(lambda: running.get(CONFIG_MAP, child, "default"))
        await running.client.delete(CONFIG_MAP, child, "default")

        async def again() -> dict[str, Any] | None:
            got = await running.get(CONFIG_MAP, child, "default")
            return got if got and got["metadata"]["uid"] != first["metadata"]["uid"] else None

        restored = await running.until(again)
        assert restored["data"] == first["data"]


def test_the_sample_gets_ready_in_memory(project_dir: Path) -> None:
    asyncio.run(_scenario(yaml.safe_load((project_dir / SAMPLE).read_text())))
'''
    )


def test_object_in_memory(project: Project, resource: Resource) -> str:
    """The in-memory test of a controller of a kind the project does not declare."""
    kind, module, pkg = resource.kind, resource.module_name, project.package
    return (
        header(project)
        + _wrapped(
            f'"""The {kind} controller with no cluster (``make test-unit``): the operator\'s '
            "controllers run in this process against appstack's in-memory API server "
            "(``appstack.sdk.InMemoryOperator``: the real client, cache and reconcilers; it "
            f"serves {kind} as the API server would, with no admission). A {kind} created in "
            'a namespace enabled for the operator is reconciled: it gets the controller\'s Event."""'
        )
        + f'''

from __future__ import annotations

import asyncio
from typing import Any

from appstack.runtime import EVENT
from appstack.sdk import InMemoryOperator

from {pkg}.controllers import CONTROLLERS
from {pkg}.controllers.{module} import PRIMARY, note
from {pkg}.identity import IDENTITY

SAMPLE: dict[str, Any] = {{
    "apiVersion": "{_api_version(resource)}",
    "kind": "{kind}",
    "metadata": {{
        "name": "{kind.lower()}-sample",
        "namespace": "default",
    }},
}}


async def _scenario() -> None:
    async with InMemoryOperator(CONTROLLERS, IDENTITY) as running:
        created = await running.client.create(PRIMARY, SAMPLE)
        uid = created["metadata"]["uid"]

        async def observed() -> list[dict[str, Any]]:
            events, _ = await running.client.list(EVENT, "default")
            return [e for e in events if e["regarding"].get("uid") == uid]

        (event,) = await running.until(observed)
        assert (event["reason"], event["note"]) == ("Observed", note(created))


def test_the_sample_is_reconciled_in_memory() -> None:
    asyncio.run(_scenario())
'''
    )


def test_config(project: Project) -> str:
    return (
        header(project)
        + '''"""config/'s generated files are what the code generates (``make manifests``): a test fails
when they drift. (manager/, default/ and prometheus/ are yours: not checked.)"""

from __future__ import annotations

from pathlib import Path

from appstack.scaffold.manifests import stale


def test_config_is_up_to_date(project_dir: Path) -> None:
    assert stale(project_dir) == [], "config/ is stale: run make manifests"
'''
    )


def test_e2e(project: Project) -> str:
    return (
        header(project)
        + '''"""The operator as a pod (``make test-e2e``): the image built without a daemon, pushed to
the local cluster's registry, deployed with the generated install (its admission policies
included) on the real node; it reconciles every sample, in a namespace enabled for it, and
its ``/metrics`` answers 401 without a token and 200 with one bound to the metrics-reader
role."""

from __future__ import annotations

from pathlib import Path

from appstack_testbed.operators import deployed_operator


def test_the_deployed_operator_reconciles_the_samples_and_guards_its_metrics(
    kube_cluster, project_dir: Path
) -> None:
    with deployed_operator(kube_cluster, project_dir) as deployed:
        deployed.apply_samples()
        deployed.wait_samples_ready()
        assert deployed.metrics_status(token=False) == 401
        assert deployed.metrics_status(token=True) == 200
'''
    )


def relative(path: str | Path) -> str:
    return str(path)

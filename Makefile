# appstack — developer entry points. Set-up is two commands: `make demo` and `make test`.
# Both install the Python dependencies into .venv (`make venv`) and build the local cluster
# from Go modules and Debian packages into $(APPSTACK_CACHE) (default ~/.cache/appstack)
# the first time. The kubebuilder workflow's targets are here too: `make install`,
# `make uninstall` (CRDs), `make run` (the operator, from here), `make deploy`,
# `make undeploy` (IMG=...), `make docker-build`, `make docker-buildx`, `make build-installer`.
# A release's artifacts: `make dist` (dist/; docs/install.md, "Release artifacts").

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: venv build prometheus lint typecheck imports unit e2e e2e-oldest test demo demo-down clean \
	docs image image-buildx image-oci lock docs-site manifests install uninstall run deploy undeploy \
	docker-build docker-push docker-buildx dist build-installer wheels

$(VENV)/.installed: pyproject.toml testbed/pyproject.toml
	@echo "[appstack] installing Python dependencies into $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]' -e ./testbed
	@touch $@

venv: $(VENV)/.installed

# Build (once; cached outside the repo) etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl and kwok, printing progress, and as root what a real node needs
# (the host's packages, kubelet, kube-proxy, CoreDNS, the local registry and the standard
# images: minutes on a cold machine, spent here rather than in the first test's set-up,
# under its timeout).
build: venv
	$(BIN)/appstack cluster build --real-node

# Prometheus and promtool for the monitoring tests (tests/integration/test_alert_rules.py,
# tests/e2e/test_monitoring_scrape.py): built once from Go modules, about 8 min the first time.
prometheus: venv
	$(BIN)/appstack cluster build --prometheus

lint: venv
	$(BIN)/ruff check src testbed/src tests bench
	$(BIN)/ruff format --check src testbed/src tests bench

typecheck: venv
	$(BIN)/mypy

imports: venv
	$(BIN)/lint-imports

unit: venv
	$(BIN)/pytest tests/unit

# Tests run in two phases on one cluster (CONTRIBUTING.md, "Tests"): first every test not
# marked `serial` on $(WORKERS) parallel workers (pytest-xdist; a test's own namespace, a
# module's tests on one worker in order, the modules longest first as tests/durations.json
# measured them — not xdist's order, most tests first: --no-loadscope-reorder —, the tests
# taking the seed's fixed NodePorts in turn: `node_ports`), then the `serial` ones alone on the quiet cluster
# (their subject is a timing bound, or they restart what every test shares). The cluster the
# first phase starts is kept for the second, which stops it (one APPSTACK_TEST_SESSION).
# Both phases run whatever the first's outcome; either failing fails the target.
# WORKERS: measured on this 2-core machine, docs/design.md "Test time"; WORKERS=0 runs the
# first phase in one process too. `make test STORE_DURATIONS=1` rewrites tests/durations.json
# from the default Kubernetes' parallel phase (commit it).
WORKERS ?= 3
define two-phases
	export APPSTACK_TEST_SESSION="$${APPSTACK_TEST_SESSION:-make-$$$$-$$(date +%s)}"; status=0; \
	APPSTACK_KEEP_CLUSTER=1 $(BIN)/pytest $(1) -n $(WORKERS) --dist loadfile --no-loadscope-reorder \
	  -m "not serial" --durations=25 $(2) || status=$$?; \
	$(BIN)/pytest $(1) -m serial -p no:xdist --durations=10 || { code=$$?; [ $$code = 5 ] || status=$$code; }; \
	exit $$status
endef

e2e: build
	$(BIN)/appstack cluster build --versitygw
	$(call two-phases,tests/e2e)

# The e2e suite again on the oldest supported Kubernetes (OLDEST_KUBERNETES in
# testbed/src/appstack_testbed/versions.py), on a control plane of its own built from Go modules into
# its own cache directory the first time (~7.5 min), like `make build`. Tests that never talk
# to the API server (building the wheel and sdist, the release artifacts), and tests whose
# subject is a program we run rather than Kubernetes (etcd's maintenance, snapshots, TLS and
# disaster recovery, an S3 server, the databases' logins: the same binaries on either
# version; etcd's membership driven through pods and volumes, test_etcdcluster.py, runs on
# both; the operator's memory against a tenant's ballast, test_tenant_memory.py: its own
# caches and pages, of lists every supported version serves alike), and the scaffolder's
# workflow (a generated project's files, lint, tests, image and deploy: what the SDK writes,
# the same on either version; the CRDs, RBAC and runtime it generates for are appstack's
# own, which run on both), a half-open watch's stall detection (test_watch_stall.py: the
# client's read timeout against the bookmark interval, 60 s on every version; a watch resumed
# from its resourceVersion runs on both, test_informer.py), the shard orphan alert and the operator's scrape (Prometheus
# evaluating the operator's gauges; the admission policy the first breaks the coordinator
# with is tested on both by test_admission_policies.py), and the runtime's client-side
# protocols on a Lease — the write fence (test_fencing.py) and sharding's handovers
# (test_sharding.py): the coordination.k8s.io/v1 Lease and optimistic concurrency they rest
# on are the same on every supported version; leader election itself, with its
# FlowSchema, runs on both (test_leader_election.py) — ran in the first session already;
# everything the API server decides (CRDs, CEL, admission policies, server-side apply,
# watches, the scheduler and kubelet of a real node) runs on both.
OLDEST_K8S := $(shell sed -n 's/^OLDEST_KUBERNETES = "\(.*\)"/\1/p' testbed/src/appstack_testbed/versions.py)
VERSION_INDEPENDENT := tests/e2e/test_packaging.py tests/e2e/test_readme.py tests/e2e/test_dist.py \
	tests/e2e/test_etcdcluster_maintenance.py tests/e2e/test_etcdcluster_s3.py \
	tests/e2e/test_etcdcluster_schedule.py tests/e2e/test_etcdcluster_tls.py \
	tests/e2e/test_etcdcluster_recovery.py tests/e2e/test_testbed_objectstore.py \
	tests/e2e/test_real_middleware.py tests/e2e/test_scaffold.py tests/e2e/test_tenant_memory.py \
	tests/e2e/test_shard_alert.py tests/e2e/test_fencing.py tests/e2e/test_sharding.py \
	tests/e2e/test_monitoring_scrape.py tests/e2e/test_watch_stall.py
e2e-oldest: venv
	APPSTACK_K8S_VERSION=$(OLDEST_K8S) $(BIN)/appstack cluster build --real-node
	export APPSTACK_K8S_VERSION=$(OLDEST_K8S) \
	  APPSTACK_TEST_CLUSTER=$${APPSTACK_TEST_CLUSTER:-appstack-test}-oldest; \
	$(call two-phases,tests/e2e $(VERSION_INDEPENDENT:%=--ignore=%))

# The test command (README, .ci/run): static checks, then unit, integration and e2e tests
# in two phases (above: parallel, then serial) on one control plane of the default
# Kubernetes, a namespace per test, then the e2e suite on the oldest supported one
# (e2e-oldest, the same two phases).
test: lint typecheck imports docs-site build prometheus
	$(BIN)/appstack cluster build --versitygw
	$(call two-phases,tests,$(if $(STORE_DURATIONS),--store-durations))
	$(MAKE) --no-print-directory e2e-oldest

# The main job: local cluster (with a real node as root), CRDs + RBAC, the operator in the
# background under its ServiceAccount, the seed sample (examples/appservice.yaml) and the
# DataService stack (examples/dataservice.yaml) applied, Ready and answering over HTTP.
demo: build
	$(BIN)/appstack cluster demo

demo-down: venv
	$(BIN)/appstack cluster down

# deploy/ (CRDs, RBAC, the operator's Deployment, install.yaml, Kustomization) and the
# Helm chart charts/appstack, generated from the code.
# For your own cluster see `appstack manifests --help` (image, namespace, watched namespaces).
manifests: venv
	$(BIN)/appstack manifests --output-dir deploy --chart-dir charts/appstack

# --- The kubebuilder workflow (seed 001), against the current kubeconfig: $KUBECONFIG, else
# ~/.kube/config, else the local cluster of `make demo` / `appstack cluster up`.
APPSTACK_CACHE ?= $(HOME)/.cache/appstack
KUBECONFIG ?= $(if $(wildcard $(HOME)/.kube/config),$(HOME)/.kube/config,$(APPSTACK_CACHE)/clusters/appstack/kubeconfig)
export KUBECONFIG
# kubectl on PATH, else the one the test bed built.
TESTBED_KUBECTL = $(shell $(BIN)/python -c 'from appstack_testbed.versions import Toolchain; print(Toolchain().binary("kubectl"))')
KUBECTL ?= $(or $(shell command -v kubectl),$(TESTBED_KUBECTL))

# `make install` and `make run` use .venv like every target; with RUN_VENV=DIR they make and
# use an environment of the operator's own dependencies only (the wheel's: 25 packages,
# 71 MB, against .venv's 114 and 518 MB, without mypy, mkdocs, boto3 or the test bed), with
# kubectl taken from PATH: `make install run RUN_VENV=.venv-run`.
RUN_VENV ?= $(VENV)
ifneq ($(RUN_VENV),$(VENV))
$(RUN_VENV)/.installed: pyproject.toml
	@echo "[appstack] installing the operator's dependencies only into $(RUN_VENV)"
	$(PYTHON) -m venv $(RUN_VENV)
	$(RUN_VENV)/bin/pip install -q --upgrade pip
	$(RUN_VENV)/bin/pip install -q -e .
	@touch $@
install: KUBECTL = $(or $(shell command -v kubectl),$(error kubectl is not on PATH))
endif

# The CRDs into the cluster / out of it (which deletes every appstack object with them).
install: $(RUN_VENV)/.installed
	$(KUBECTL) apply --server-side -f deploy/crds/

uninstall: venv
	$(KUBECTL) delete --ignore-not-found -f deploy/crds/

# The operator from this checkout, against the current kubeconfig, in the foreground.
run: $(RUN_VENV)/.installed
	$(RUN_VENV)/bin/appstack run

# The operator into the cluster, running IMG (build it first: make docker-build, or without
# a daemon make image-oci, which also puts it into the local cluster's registry).
deploy: venv
	$(BIN)/appstack manifests --image $(IMG) -o yaml | $(KUBECTL) apply --server-side -f -

# Remove appstack from the cluster: custom resources (finalized by the still-running
# operator), then the operator, then the CRDs. Asks first; YES=1 does not.
undeploy: venv
	$(BIN)/appstack uninstall $(if $(YES),--yes)

# The CRDs' field reference (docs/crd-reference.md), generated from the kinds' models. The
# runtime's and the SDK's API references (docs/runtime-api.md, docs/sdk-api.md) are rendered
# from the docstrings by mkdocstrings when the site is built (docs-site).
docs: venv
	$(BIN)/python -m appstack.manifests.reference docs/crd-reference.md

# The documentation site (mkdocs.yml): docs/ built into build/site, every internal link and
# anchor checked (strict: one broken link fails the build, and `make test`).
docs-site: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The operator image (Dockerfile). With a Docker daemon: `make image IMG=registry/appstack:tag`;
# multi-platform, pushed (like kubebuilder's docker-buildx):
# `make image-buildx IMG=registry/appstack:tag PLATFORMS=linux/amd64,linux/arm64`.
# Without a daemon (root on Debian/Ubuntu): `make image-oci` builds the same contents with
# mmdebstrap + buildah into an oci-archive in $(APPSTACK_CACHE)/image (what `make test` runs).
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' src/appstack/__init__.py)
IMG ?= appstack:$(VERSION)
PLATFORMS ?= linux/amd64,linux/arm64
BASE_IMAGE ?=
# The image's provenance labels (org.opencontainers.image.source/.revision/.created).
SOURCE ?= $(shell git remote get-url origin 2>/dev/null | sed -E 's#^[^@/]+@([^:/]+):#https://\1/#; s#\.git$$##')
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)$(if $(shell git status --porcelain -- src pyproject.toml requirements.lock 2>/dev/null),-dirty)
CREATED ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
DOCKER_BUILD_ARGS := $(if $(BASE_IMAGE),--build-arg BASE_IMAGE=$(BASE_IMAGE)) \
	--build-arg SOURCE=$(SOURCE) --build-arg REVISION=$(REVISION) --build-arg CREATED=$(CREATED)
define need-docker
	@command -v docker >/dev/null && docker info >/dev/null 2>&1 || { \
	  echo "[appstack] no Docker daemon reachable ($$(command -v docker || echo 'docker not installed'))."; \
	  echo "[appstack] Build the same image without a daemon (as root): make image-oci"; exit 1; }
endef

# Every wheel the image installs, into dist/image-wheels (the Dockerfile COPYs them and
# installs from them alone, --no-index): appstack's, built from this checkout, and the
# dependencies requirements.lock pins, hash-checked, for Debian 12's Python 3.11 on amd64
# and arm64 (downloaded here, where the package index is reachable; appstack_testbed.image).
wheels: venv
	$(BIN)/python -m appstack_testbed.image wheels dist/image-wheels

image: wheels
	$(need-docker)
	docker build $(DOCKER_BUILD_ARGS) --tag $(IMG) .

image-buildx: wheels
	$(need-docker)
	docker buildx build $(DOCKER_BUILD_ARGS) --platform=$(PLATFORMS) --tag $(IMG) --push .

image-oci: venv
	$(BIN)/appstack cluster image --tag $(IMG)

# The release artifacts, into $(DIST): the wheel and sdist, the image as an OCI archive
# (appstack-$(VERSION).oci.tar, built as by image-oci: root), the packaged Helm chart
# (appstack-$(VERSION).tgz), install.yaml running IMG's repository pinned to the archived
# image's digest (make dist IMG=registry.example.com/team/appstack) and SHA256SUMS.
# Cached: a second run rewrites nothing. appstack_testbed.dist; docs/install.md.
DIST ?= dist
dist: venv
	$(BIN)/python -m appstack_testbed.dist --image $(IMG) -o $(DIST)

# kubebuilder's names for the same.
docker-build: image
docker-buildx: image-buildx
build-installer: dist
docker-push:
	$(need-docker)
	docker push $(IMG)

# Re-pin requirements.lock (the image's Python dependencies, hash-checked) from pyproject.toml,
# for Debian 12's Python 3.11. Run after changing [project].dependencies.
lock: venv
	$(BIN)/uv pip compile pyproject.toml --python-version 3.11 --python-platform linux \
	  --generate-hashes --no-strip-markers --quiet -o requirements.lock

clean:
	rm -rf $(VENV) src/*.egg-info .pytest_cache .mypy_cache .ruff_cache .import_linter_cache

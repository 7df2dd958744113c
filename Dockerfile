# syntax=docker/dockerfile:1
# The appstack operator image: `make image` (Docker), `make image-buildx PLATFORMS=...`.
# Both run `make wheels` first: every wheel the image installs lands in dist/image-wheels —
# appstack's, built from this checkout, and its dependencies' pinned with hashes in
# requirements.lock, for Debian 12's Python 3.11 on amd64 and arm64. The build stage
# installs from those alone (--no-index, hash-checked): no package index is asked for
# anything while the image builds (appstack is on none). The final stage is Debian's
# python3 plus that venv, run as uid 65532 (deploy/operator.yaml's securityContext).
# `make image-oci` builds the same contents without a daemon
# (testbed/src/appstack_testbed/image.py replays these steps; tests/unit/testbed/test_image_spec.py
# keeps the two in step) and `make test` runs the operator from that image.
#
# Base: Debian 12 (bookworm) slim, pinned to a point release. To pin it by digest:
#   skopeo inspect --format '{{.Digest}}' docker://docker.io/library/debian:12.15-slim
#   make image BASE_IMAGE=debian:12.15-slim@sha256:<digest>
ARG BASE_IMAGE=debian:12.15-slim

FROM ${BASE_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
COPY requirements.lock /src/
COPY dist/image-wheels/ /wheels/
RUN python3 -m venv /opt/build-tools \
 && python3 -m venv --without-pip /opt/appstack \
 && /opt/build-tools/bin/pip --python /opt/appstack/bin/python install --no-index --find-links /wheels --no-deps --require-hashes -r /src/requirements.lock \
 && /opt/build-tools/bin/pip --python /opt/appstack/bin/python install --no-index --no-deps /wheels/appstack-*.whl \
 && /opt/build-tools/bin/pip --python /opt/appstack/bin/python check

FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --gid 65532 appstack \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin appstack
COPY --from=build /opt/appstack /opt/appstack
ENV PATH=/opt/appstack/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Provenance (`make image` passes them: the origin remote, git rev-parse HEAD, the time).
ARG SOURCE="" REVISION="" CREATED=""
LABEL org.opencontainers.image.title="appstack" \
      org.opencontainers.image.description="The appstack Kubernetes operator" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
USER 65532:65532
WORKDIR /
EXPOSE 8080 8081
ENTRYPOINT ["appstack"]
CMD ["run", "--leader-elect"]

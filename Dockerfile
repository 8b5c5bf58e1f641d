# syntax=docker/dockerfile:1
# The manager image used by config/manager and charts/aiokcm: `docker build -t aiokcm:0.1.0 .`
# (docs/image.md). No container engine runs on this project's build machines: tests/image builds the
# build stage's virtualenv on the host, as the RUN below does, and lints this file.
#
# Base: Python 3.11.14 on Debian 12 (bookworm), slim; pinned by tag and by the digest of its multi-architecture
# index (refresh both together: `docker buildx imagetools inspect python:3.11.14-slim-bookworm`).
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY manager ./manager
COPY controllers ./controllers
COPY cronschedule ./cronschedule
# A virtualenv without pip holding aiokcm and its dependencies, no extras: kubesim and its schemas (the
# `sandbox` extra) stay out. The final stage copies the virtualenv alone.
RUN python -m venv --without-pip /opt/aiokcm \
    && pip wheel --no-deps --wheel-dir /wheels . \
    && pip --python /opt/aiokcm/bin/python install /wheels/aiokcm-*.whl

FROM ${PYTHON_IMAGE}
# CI sets both: --build-arg VERSION=$(version in pyproject.toml) --build-arg REVISION=$(git rev-parse HEAD)
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="aiokcm" \
      org.opencontainers.image.description="A kube-controller-manager-style controller daemon on one asyncio loop" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11.14-slim-bookworm" \
      org.opencontainers.image.base.digest="sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d"
ENV PATH=/opt/aiokcm/bin:/usr/local/bin:/usr/bin:/bin PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /opt/aiokcm /opt/aiokcm
# The distroless `nonroot` user: numeric, so that runAsNonRoot can verify it without an /etc/passwd entry.
USER 65532:65532
EXPOSE 10257
# Exec form: no shell at run time.
ENTRYPOINT ["/opt/aiokcm/bin/aiokcm"]

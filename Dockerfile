# syntax=docker/dockerfile:1
# One image for every Trawl service; the command names the module to run:
#   docker run ghcr.io/trawl-crawler/trawl:0.1.0 services.fetcher
#   docker run ghcr.io/trawl-crawler/trawl:0.1.0 cli.stack.init_job
# Configuration comes from TRAWL_* environment variables only (see docs/architecture.md).

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# ---- builder: the project and its runtime dependencies in a virtualenv (no dev extras) ----
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_INPUT=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/trawl
WORKDIR /src
COPY pyproject.toml ./
COPY libs ./libs
COPY services ./services
COPY cli ./cli
RUN --mount=type=cache,target=/root/.cache/pip \
    /opt/trawl/bin/pip install --upgrade pip \
    && /opt/trawl/bin/pip install . \
    && cd / && /opt/trawl/bin/python -c "import cli.stack.init_job, cli.stack.healthcheck, libs.simweb.server; \
from cli.stack.layout import SERVICES; from cli.stack.local_stack import migrations_dir; \
import importlib; [importlib.import_module(f'services.{s}.main') for s in SERVICES]; \
assert list(migrations_dir('scheduler').glob('*.sql')), 'migrations missing from the wheel'"

# ---- runtime: the virtualenv only, run as an unprivileged user ----
FROM ${PYTHON_IMAGE} AS runtime
# uid/gid 10001: the Kubernetes manifests' runAsUser/runAsGroup.
RUN groupadd --system --gid 10001 trawl \
    && useradd --system --uid 10001 --gid trawl --home-dir /home/trawl --create-home \
       --shell /usr/sbin/nologin trawl
COPY --from=builder /opt/trawl /opt/trawl
ENV PATH=/opt/trawl/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# An empty working directory, so that nothing in it shadows the installed packages.
WORKDIR /home/trawl
USER 10001:10001
EXPOSE 50051 9100
ENTRYPOINT ["python", "-m"]

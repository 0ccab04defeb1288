"""Where the Docker engine is and which image the Docker sandbox runs: shared by the backend and the image build.

The docker SDK is an optional dependency (``pip install docker``), so it is imported only when an engine is
actually wanted; without it the Docker backend reports itself unavailable instead of failing at import.
"""

from __future__ import annotations

import os
from typing import Any

from mcp_tools.errors import SandboxUnavailable

HOST_ENV = "COMPANYSIM_DOCKER_HOST"
"""The engine for the sandbox alone (e.g. a private ``unix://`` socket), taking precedence over DOCKER_HOST."""
IMAGE_REPOSITORY = "companysim/sandbox"
IMAGE_VERSION = "bookworm-1"
"""Bump when the image recipe changes (packages, users, layout): a new tag makes every engine rebuild it."""
IMAGE = f"{IMAGE_REPOSITORY}:{IMAGE_VERSION}"
SANDBOX_UID = 64001
"""The uid sandboxed code runs as when the host is root: owned by no host account, and distinct from the
bwrap backend's 64000 so neither backend's RLIMIT_NPROC count ever includes the other's processes. The image
names it ``sandbox`` in its /etc/passwd."""
API_TIMEOUT = 60
"""Seconds any one engine API call may take (the image import gets ``image.IMPORT_TIMEOUT``)."""
LABEL = "org.companysim.sandbox"
"""Label on every container the backend creates, so leftovers are easy to find (and to prove absent)."""


def docker_host() -> str | None:
    """The engine address: ``$COMPANYSIM_DOCKER_HOST``, else ``$DOCKER_HOST``, else None (the SDK default)."""
    return os.environ.get(HOST_ENV) or os.environ.get("DOCKER_HOST") or None


def connect(base_url: str | None = None, *, timeout: int = API_TIMEOUT) -> Any:
    """A low-level ``docker.APIClient`` for ``base_url`` (default: ``docker_host()``), API version negotiated.

    Raises:
        SandboxUnavailable: The docker SDK is missing or no engine answers at that address.
    """
    try:
        import docker  # type: ignore[import-untyped]  # optional dependency, imported only when used
        from docker.errors import DockerException  # type: ignore[import-untyped]
    except ImportError as exc:
        raise SandboxUnavailable("the docker SDK is not installed (pip install docker==7.2.0)") from exc
    url = base_url or docker_host()
    try:
        return docker.APIClient(base_url=url, version="auto", timeout=timeout)
    except DockerException as exc:
        where = url or "the default socket (unix:///var/run/docker.sock)"
        raise SandboxUnavailable(f"no Docker engine answers at {where}: {_first_line(exc)}") from exc


def image_present(api: Any, tag: str = IMAGE) -> bool:
    """Whether the engine holds an image tagged ``tag``."""
    from docker.errors import ImageNotFound

    try:
        api.inspect_image(tag)
    except ImageNotFound:
        return False
    return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__

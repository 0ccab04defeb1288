"""A Docker image of ``companysim server``, built with the local engine and no registry.

The base is the Docker sandbox's image (``companysim/sandbox:bookworm-1``: debootstrapped Debian bookworm with
python3, imported with ``docker import``; built first by ``mcp_tools.sandbox.image.build_image`` when missing).
companysim goes in from this checkout: the host builds a wheel of it and a wheelhouse of every dependency at
the exact versions of ``constraints.txt`` (``pip wheel``, which reaches PyPI or the machine's mirror), and a
two-step Dockerfile on that base installs them with ``pip install --no-index`` into a virtualenv at
``/opt/companysim``. The build therefore needs no network inside the engine (``network_mode=none``), and the
image holds the same versions as the checkout's tests ran with.

The image runs as the unprivileged ``sandbox`` account, keeps its base worlds in ``/var/lib/companysim``, and
its HEALTHCHECK asks ``/health`` on ``$COMPANYSIM_PORT`` (default 8700). The default command serves on every
address of the container, which ``companysim server`` allows only with a token: pass
``-e COMPANYSIM_SERVER_TOKEN=...``. Families with git repositories (``fix-failing-test-v0``) need git and a code
sandbox, which the image does not carry.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from sim.server.errors import ServerError

__all__ = ["DEFAULT_TAG", "ImageReport", "build_server_image", "dockerfile"]

DEFAULT_TAG = "companysim/server:0.1.0"
VENV = "/opt/companysim"
DATA = "/var/lib/companysim"
PORT = 8700
BUILD_TIMEOUT = 1800
"""Seconds the engine may take for the whole build (the install step unpacks a few hundred MB of wheels)."""


class ImageError(ServerError):
    """The server image could not be built (no engine, no checkout, a wheel that would not build, a failed step)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="image_build_failed", status=500)


@dataclass(frozen=True)
class ImageReport:
    """What ``build_server_image`` made: the tag, the engine's image id, its size and the build's wall time."""

    tag: str
    image_id: str
    size_bytes: int
    seconds: float


def dockerfile(base: str, uid: int) -> str:
    """The Dockerfile: a virtualenv from the wheelhouse alone, the data directory, the health check, the command."""
    health = (
        "import os, urllib.request; "
        "urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('COMPANYSIM_PORT', '8700'), timeout=3)"
    )
    return "\n".join([
        f"FROM {base}",
        "COPY wheels /tmp/wheels",
        f"RUN python3 -m venv --without-pip {VENV} \\",
        f" && {VENV}/bin/python3 /tmp/wheels/$(cd /tmp/wheels && ls pip-*.whl)/pip install --no-index --no-cache-dir"
        f" --disable-pip-version-check --find-links /tmp/wheels companysim \\",
        f" && rm -rf /tmp/wheels && mkdir -p {DATA} && chown {uid}:{uid} {DATA}",
        f"ENV PATH={VENV}/bin:/usr/sbin:/usr/bin:/sbin:/bin COMPANYSIM_DATA_DIR={DATA} COMPANYSIM_PORT={PORT}"
        " PYTHONDONTWRITEBYTECODE=1",
        f"USER {uid}",
        "WORKDIR /tmp",
        f"EXPOSE {PORT}",
        f'HEALTHCHECK --interval=5s --timeout=4s --start-period=20s --retries=3 CMD ["python3", "-c", "{health}"]',
        'ENTRYPOINT ["companysim"]',
        'CMD ["server", "--host", "0.0.0.0"]',
        "",
    ])  # fmt: skip


def checkout_root() -> Path:
    """The source tree companysim runs from (the image installs this checkout, not a release).

    Raises:
        ImageError: companysim is not running from a checkout (no ``pyproject.toml`` and ``constraints.txt``).
    """
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "constraints.txt").is_file():
        raise ImageError(f"{root} is not a companysim checkout (pyproject.toml and constraints.txt are needed)")
    return root


def wheelhouse(root: Path, into: Path, log: Callable[[str], None]) -> None:
    """Wheels of the checkout and of every dependency at the pins of ``constraints.txt``, and of pip itself.

    Raises:
        ImageError: pip could not build or fetch a wheel (its last lines say which).
    """
    pip = version("pip")
    log(f"wheels: companysim from {root}, dependencies at constraints.txt, pip {pip}")
    cmd = [
        sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--wheel-dir", str(into),
        "--constraint", str(root / "constraints.txt"), str(root), f"pip=={pip}",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)  # noqa: S603
    if done.returncode != 0:
        tail = [line for line in done.stderr.splitlines() if line.strip() and "is ignored" not in line][-2:]
        raise ImageError(f"pip wheel failed: {' | '.join(tail) or done.returncode}")


def _context(root: Path, wheels: Path, base: str, uid: int) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        text = dockerfile(base, uid).encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
        for wheel in sorted(wheels.glob("*.whl")):
            tar.add(wheel, arcname=f"wheels/{wheel.name}")
    buffer.seek(0)
    return buffer


def build_server_image(
    *, tag: str = DEFAULT_TAG, base_url: str | None = None, log: Callable[[str], None] = lambda _: None
) -> ImageReport:
    """Build ``tag`` on the engine at ``base_url`` (default: ``$COMPANYSIM_DOCKER_HOST``/``$DOCKER_HOST``).

    Raises:
        ImageError: a wheel, the base image or a build step failed (the engine's last message is kept).
        SandboxUnavailable: no engine answers (or the docker SDK is missing).
    """
    from mcp_tools.sandbox.engine import IMAGE, SANDBOX_UID, connect, image_present
    from mcp_tools.sandbox.image import build_image

    start = time.monotonic()
    root = checkout_root()
    api = connect(base_url)
    if not image_present(api, IMAGE):
        log(f"base image {IMAGE} missing: building it (debootstrap + docker import)")
        build_image(base_url=base_url, log=log)
    scratch = Path(tempfile.mkdtemp(prefix="companysim-image-"))
    try:
        wheelhouse(root, scratch, log)
        log(f"building {tag} on {IMAGE} ({len(list(scratch.glob('*.whl')))} wheels)")
        context = _context(root, scratch, IMAGE, SANDBOX_UID)
        _build(api, context, tag, log)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    info = api.inspect_image(tag)
    return ImageReport(tag, str(info["Id"]), int(info.get("Size", 0)), time.monotonic() - start)


def _build(api: Any, context: io.BytesIO, tag: str, log: Callable[[str], None]) -> None:
    """Run the Dockerfile on the engine's classic builder, with no network (everything is in the context)."""
    from docker.errors import APIError  # type: ignore[import-untyped]

    try:
        stream = api.build(
            fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True, network_mode="none",
            decode=True, timeout=BUILD_TIMEOUT,
        )  # fmt: skip
        for chunk in stream:
            if "error" in chunk:
                raise ImageError(f"docker build of {tag} failed: {str(chunk['error']).strip().splitlines()[-1]}")
            line = str(chunk.get("stream", "")).strip()
            if line.startswith("Step "):
                log(line)
    except APIError as exc:
        raise ImageError(f"the engine refused the build of {tag}: {exc.explanation or exc}") from None

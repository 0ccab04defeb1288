"""Build the Docker sandbox image without a registry: debootstrap a minimal Debian, then import it as an image.

No image registry is reachable from the project machines, and the docker 28 client first on PATH cannot build
(no buildx), so the image is made the way the feasibility notes measured: ``debootstrap --variant=minbase``
of Debian bookworm with python3 and python3-pytest from the machine's own apt mirror, a ``sandbox`` account
for the sandbox uid, apt caches dropped, then ``POST /images/create?fromSrc=-`` (the SDK's ``import_image``) of
a tar of that root. The build is idempotent: an engine that already holds the tag is left alone unless forced.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_tools.errors import AppError
from mcp_tools.sandbox.engine import IMAGE, IMAGE_REPOSITORY, IMAGE_VERSION, SANDBOX_UID, connect, image_present

SUITE = "bookworm"
PACKAGES = ("python3", "python3-pytest", "util-linux")
"""util-linux is in every minbase root already; it is named because the backend runs its ``prlimit``."""
IMPORT_TIMEOUT = 1800
"""Seconds the engine may take to answer an image import (a few hundred MB read from a tar)."""
DEFAULT_MIRROR = "http://deb.debian.org/debian"
MIRROR_ENV = "COMPANYSIM_DEBIAN_MIRROR"
APT_DIR = Path("/etc/apt")
TOOL_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
CHANGES = ("WORKDIR /workspace", 'CMD ["/bin/sh"]')
"""Image config set at import: the mount point as working directory, a shell as the (unused) default command."""
_ONE_LINE = re.compile(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)")


class ImageBuildError(AppError):
    """The sandbox image could not be built (not root, no debootstrap, mirror unreachable, import refused)."""

    code = "image_build_failed"


@dataclass(frozen=True)
class BuildReport:
    """What ``build_image`` did.

    Attributes:
        tag: The image tag.
        built: False when the tag already existed and nothing was done.
        image_id: The engine's id of the image.
        size_bytes: The image size the engine reports.
        mirror: The Debian mirror used (empty when nothing was built).
        seconds: Wall time of the build (0 when skipped).
    """

    tag: str
    built: bool
    image_id: str
    size_bytes: int
    mirror: str = ""
    seconds: float = 0.0


def find_mirror(apt_dir: Path = APT_DIR, suite: str = SUITE) -> str:
    """The Debian archive the machine's apt uses for ``suite`` (so debootstrap goes where apt is allowed to).

    Reads ``sources.list``, ``sources.list.d/*.list`` (one-line form) and ``sources.list.d/*.sources``
    (deb822), skipping the security archive. ``$COMPANYSIM_DEBIAN_MIRROR`` overrides; the default is
    deb.debian.org.
    """
    override = os.environ.get(MIRROR_ENV)
    if override:
        return override
    for uri, suites in _apt_sources(apt_dir):
        if suite in suites and not uri.rstrip("/").endswith("-security"):
            return uri.rstrip("/")
    return DEFAULT_MIRROR


def _apt_sources(apt_dir: Path) -> Iterable[tuple[str, list[str]]]:
    files = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*"))]
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if path.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields: dict[str, str] = {}
                for line in stanza.splitlines():
                    key, sep, value = line.partition(":")
                    if sep and not line.startswith(("#", " ", "\t")):
                        fields[key.strip().lower()] = value.strip()
                if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes") != "no":
                    for uri in fields.get("uris", "").split():
                        yield uri, fields.get("suites", "").split()
        elif path.name == "sources.list" or path.suffix == ".list":
            for line in text.splitlines():
                match = _ONE_LINE.match(line)
                if match:
                    yield match.group(1), [match.group(2)]


def build_image(
    *,
    base_url: str | None = None,
    force: bool = False,
    mirror: str | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> BuildReport:
    """Make sure the engine holds ``IMAGE``; build it from a debootstrapped root when missing (or ``force``).

    Args:
        base_url: The engine (default: ``$COMPANYSIM_DOCKER_HOST`` / ``$DOCKER_HOST``).
        force: Rebuild even when the tag exists (the old image loses the tag).
        mirror: Debian archive URL (default: the machine's apt mirror, see ``find_mirror``).
        log: Receives one line per step, for the CLI to print.

    Raises:
        ImageBuildError: Not root, debootstrap missing or failing, or the engine refused the import.
        SandboxUnavailable: No engine answers at ``base_url``.
    """
    api = connect(base_url, timeout=IMPORT_TIMEOUT)
    previous = str(api.inspect_image(IMAGE)["Id"]) if image_present(api) else None
    if not force and previous is not None:
        log(f"{IMAGE} already present; nothing to do (use --force to rebuild)")
        return _report(api, built=False)
    if os.geteuid() != 0:
        raise ImageBuildError("building the sandbox image needs root (debootstrap creates device nodes and owners)")
    debootstrap = shutil.which("debootstrap", path=TOOL_PATH)
    if debootstrap is None:
        raise ImageBuildError(
            "debootstrap not found; apt-get install -y debootstrap (or run .ci/docker-setup.sh start)"
        )
    source = mirror or find_mirror()
    start = time.monotonic()  # allow-nondeterminism: build duration for the operator, not part of any result
    scratch = Path(tempfile.mkdtemp(prefix="companysim-rootfs-", dir="/var/tmp"))  # noqa: S108 - root-owned 0700
    try:
        rootfs = scratch / "rootfs"
        log(f"debootstrap --variant=minbase {SUITE} with {', '.join(PACKAGES)} from {source}")
        _debootstrap(debootstrap, rootfs, source)
        _customise(rootfs)
        tarball = scratch / "rootfs.tar"
        log(f"packing {rootfs}")
        _run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."], "tar")
        log(f"importing as {IMAGE}")
        _import(api, tarball)
    finally:
        _remove_scratch(scratch)
    if not image_present(api):
        raise ImageBuildError(f"the engine accepted the import but has no {IMAGE}")
    seconds = time.monotonic() - start  # allow-nondeterminism: see above
    report = _report(api, built=True, mirror=source, seconds=seconds)
    if previous is not None and previous != report.image_id:
        _drop_untagged(api, previous, log)
    log(f"built {IMAGE} ({report.image_id[:19]}, {report.size_bytes / 2**20:.0f} MiB) in {seconds:.0f} s")
    return report


def _debootstrap(debootstrap: str, rootfs: Path, mirror: str) -> None:
    argv = [debootstrap, "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, str(rootfs), mirror]
    _run(argv, "debootstrap", timeout=1800)


def _customise(rootfs: Path) -> None:
    """Add the sandbox account, the workspace mount point, and drop what only apt needs (caches, lists)."""
    etc = rootfs / "etc"
    with (etc / "passwd").open("a", encoding="utf-8") as passwd:
        passwd.write(f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:/tmp:/bin/sh\n")
    with (etc / "group").open("a", encoding="utf-8") as group:
        group.write(f"sandbox:x:{SANDBOX_UID}:\n")
    (rootfs / "workspace").mkdir(mode=0o755, exist_ok=True)
    for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for entry in (rootfs / cache).glob("*"):
            if entry.is_file() and not entry.name == "lock":
                entry.unlink()
    for log_file in (rootfs / "var/log").rglob("*"):
        if log_file.is_file():
            log_file.write_bytes(b"")


def _import(api: Any, tarball: Path) -> None:
    from docker.errors import APIError  # type: ignore[import-untyped]  # optional, untyped

    try:
        api.import_image_from_file(str(tarball), repository=IMAGE_REPOSITORY, tag=IMAGE_VERSION, changes=CHANGES)
    except APIError as exc:
        raise ImageBuildError(f"the engine refused the image import: {exc}") from exc


def _report(api: Any, *, built: bool, mirror: str = "", seconds: float = 0.0) -> BuildReport:
    info = api.inspect_image(IMAGE)
    return BuildReport(IMAGE, built, str(info["Id"]), int(info.get("Size", 0)), mirror, round(seconds, 1))


def _drop_untagged(api: Any, image_id: str, log: Callable[[str], None]) -> None:
    """Remove the image a forced rebuild replaced (now untagged), so rebuilds do not pile up on the engine.

    An image still used by a container, or tagged elsewhere, is kept: the engine refuses, and that is fine.
    """
    from docker.errors import APIError

    try:
        api.remove_image(image_id, noprune=False)
    except APIError as exc:
        log(f"kept the previous image {image_id[:19]}: {str(exc).splitlines()[0][:200]}")
        return
    log(f"removed the previous image {image_id[:19]}")


def _run(argv: list[str], what: str, *, timeout: float = 600) -> None:
    try:
        done = subprocess.run(  # noqa: S603 - fixed tools, argv as a list
            argv, capture_output=True, text=True, errors="replace", timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ImageBuildError(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise ImageBuildError(f"{what} failed (exit {done.returncode}):\n{tail}")


def _remove_scratch(scratch: Path) -> None:
    """Unmount whatever a failed debootstrap left mounted inside, then delete; never delete through a mount.

    debootstrap mounts /proc and /sys (and may bind /dev) into the target while it installs; an interrupted
    run leaves them there, and deleting through a bound /dev would delete the host's device nodes.
    """
    prefix = str(scratch) + "/"
    for target in sorted(_mounts_under(prefix), reverse=True):
        subprocess.run(["umount", "-l", target], capture_output=True, check=False)  # noqa: S603, S607
    left = _mounts_under(prefix)
    if left:
        raise ImageBuildError(f"could not unmount {', '.join(left)}; remove {scratch} by hand")
    shutil.rmtree(scratch, ignore_errors=True)


def _mounts_under(prefix: str) -> list[str]:
    try:
        lines = Path("/proc/self/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    points = [line.split()[1].replace("\\040", " ") for line in lines if len(line.split()) > 1]
    return [point for point in points if point.startswith(prefix)]

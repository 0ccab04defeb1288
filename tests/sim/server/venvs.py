"""Separate virtualenvs for client packages whose pins clash with ours (openenv-core, verifiers).

Each is created once with ``python3 -m venv`` and ``pip install <exact pins>`` under
``~/.cache/companysim-venvs/<name>-<hash of the pins>`` (``COMPANYSIM_VENV_CACHE`` moves it) and reused. Creation
happens under a file lock, into a temporary directory renamed into place, so a half-built venv is never used.
When it cannot be created (no network), the test is skipped with the reason, except under CI (``CI`` set),
where it fails: PyPI is reachable there.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

OPENENV_PINS = ("openenv-core==0.3.0",)
VERIFIERS_PINS = ("verifiers==0.4.0",)


def cache_root() -> Path:
    """Where the venvs live."""
    return Path(os.environ.get("COMPANYSIM_VENV_CACHE") or Path.home() / ".cache" / "companysim-venvs")


def venv_python(name: str, pins: tuple[str, ...]) -> Path:
    """The interpreter of the venv ``name`` holding exactly ``pins``, created on first use.

    Args:
        name: A short name for the directory.
        pins: ``package==version`` requirements.

    Returns:
        The venv's ``bin/python``.
    """
    digest = hashlib.sha256("\n".join(sorted(pins)).encode()).hexdigest()[:12]
    root = cache_root()
    target = root / f"{name}-{digest}"
    python = target / "bin" / "python"
    if python.exists():
        return python
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{name}-{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.exists():
            return python
        building = root / f"{name}-{digest}.building"
        shutil.rmtree(building, ignore_errors=True)
        try:
            subprocess.run(["python3", "-m", "venv", str(building)], check=True, capture_output=True, timeout=300)
            pip = [str(building / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            subprocess.run([*pip, *pins], check=True, capture_output=True, text=True, timeout=1200)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            shutil.rmtree(building, ignore_errors=True)
            detail = getattr(exc, "stderr", None) or str(exc)
            reason = f"could not create the {name} venv ({' '.join(pins)}): {str(detail).strip()[-400:]}"
            if os.environ.get("CI"):
                pytest.fail(reason)
            pytest.skip(reason)
        building.rename(target)
    return python

"""Seeded fault injection at the tool boundary: production systems fail, and agents must cope.

Whether a call faults, and how, is a pure function of (episode seed, tool name, that tool's call index in the
episode): ``decide`` hashes them, so a replay, a fork or a reordered batch sees exactly the same faults, and a
different call earlier in the episode does not shift the schedule of another tool.

Fault taxonomy (``FAULTS``) and what each does to state:

================== ======= ============================================================================
fault              applies effect
================== ======= ============================================================================
timeout            any     the call is not run; error ``timeout``; 30 s of simulated time pass
rate_limited       any     the call is not run; error ``rate_limited`` with a retry-after; 1 s passes
server_error       any     the call is not run; error ``server_error`` (a 503 with a request id)
permission_flake   any     the call is not run; error ``forbidden`` saying the check itself failed
partial_result     READ    the call runs; its longest list is cut to half and ``partial: true`` added
stale_read         READ    the call runs; the agent gets this tool's previous result for the same
                           arguments (a lagging replica), when there is one that differs
npc_no_show        NPCs    an NPC skips a turn it was due and stays away for 30 minutes to 4 working
                           hours (``npc_absence``, applied by ``sim.coworkers``; listed in the faults)
================== ======= ============================================================================

No fault ever changes the world: the failing kinds never reach the service, and the two read kinds only
change what the agent sees. ``submit`` never faults. Profiles: ``none``, ``realistic`` (~5% of calls) and
``harsh`` (~10%), with per-app and per-tool rate overrides (``NoiseProfile.parse``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from sim.errors import BadNoise

Fault = Literal[
    "timeout", "rate_limited", "server_error", "permission_flake", "partial_result", "stale_read", "npc_no_show"
]
FAULTS: tuple[Fault, ...] = (
    "timeout",
    "rate_limited",
    "server_error",
    "permission_flake",
    "partial_result",
    "stale_read",
    "npc_no_show",
)
READ_ONLY_FAULTS = frozenset({"partial_result", "stale_read"})
TOOL_FAULTS: tuple[Fault, ...] = tuple(f for f in FAULTS if f != "npc_no_show")
COST_S: Mapping[str, int] = {"timeout": 30, "rate_limited": 1, "server_error": 2, "permission_flake": 2}
_WEIGHTS: Mapping[str, float] = {
    "timeout": 0.25,
    "rate_limited": 0.2,
    "server_error": 0.25,
    "permission_flake": 0.1,
    "partial_result": 0.1,
    "stale_read": 0.1,
}


@dataclass(frozen=True, kw_only=True)
class NoiseProfile:
    """How often calls fault: a base rate, per-app and per-tool overrides, the mix of faults, NPC no-shows."""

    name: str
    rate: float = 0.0
    apps: Mapping[str, float] = field(default_factory=dict)
    tools: Mapping[str, float] = field(default_factory=dict)
    weights: Mapping[str, float] = field(default_factory=lambda: dict(_WEIGHTS))
    npc_no_show: float = 0.0

    def rate_for(self, tool: str, app: str) -> float:
        """The fault probability of one call of ``tool`` (tool override, else app override, else base)."""
        if tool in self.tools:
            return self.tools[tool]
        return self.apps.get(app, self.rate)

    def to_json(self) -> dict[str, Any]:
        """The profile as plain data (what a trace header records)."""
        return {
            "name": self.name,
            "rate": self.rate,
            "apps": dict(sorted(self.apps.items())),
            "tools": dict(sorted(self.tools.items())),
            "weights": dict(sorted(self.weights.items())),
            "npc_no_show": self.npc_no_show,
        }

    @classmethod
    def parse(cls, value: str | Mapping[str, Any] | NoiseProfile | None) -> NoiseProfile:
        """A profile from its name, or from ``{"profile": name, "rate", "apps", "tools", "weights"}``.

        Raises:
            BadNoise: an unknown profile or fault name, or a rate outside [0, 1]; the message names the value.
        """
        if isinstance(value, NoiseProfile):
            return value
        if value is None:
            return PROFILES["none"]
        if isinstance(value, str):
            if value not in PROFILES:
                raise BadNoise(f"unknown noise profile {value!r}; expected one of {', '.join(PROFILES)}")
            return PROFILES[value]
        if not isinstance(value, Mapping):
            raise BadNoise(f"noise must be a profile name or an object, got {type(value).__name__}")
        unknown = set(value) - {"profile", "rate", "apps", "tools", "weights", "npc_no_show"}
        if unknown:
            raise BadNoise(f"unknown noise setting(s) {', '.join(sorted(unknown))}")
        base = cls.parse(str(value.get("profile", "none")))
        weights = dict(value.get("weights", base.weights))
        for fault in weights:
            if fault not in TOOL_FAULTS:
                raise BadNoise(f"unknown fault type {fault!r}; expected one of {', '.join(TOOL_FAULTS)}")
        profile = replace(
            base,
            name=f"{base.name}+custom",
            rate=_rate("rate", value.get("rate", base.rate)),
            apps={str(k): _rate(f"apps.{k}", v) for k, v in dict(value.get("apps", base.apps)).items()},
            tools={str(k): _rate(f"tools.{k}", v) for k, v in dict(value.get("tools", base.tools)).items()},
            weights={k: _rate(f"weights.{k}", v) for k, v in weights.items()},
            npc_no_show=_rate("npc_no_show", value.get("npc_no_show", base.npc_no_show)),
        )
        if profile.rate_for("", "") > 0 and not any(profile.weights.values()):
            raise BadNoise("noise weights are all zero: no fault type could fire")
        return profile


def _rate(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise BadNoise(f"noise {name} must be a number in [0, 1], got {value!r}")
    return float(value)


PROFILES: Mapping[str, NoiseProfile] = {
    "none": NoiseProfile(name="none"),
    "realistic": NoiseProfile(name="realistic", rate=0.05, npc_no_show=0.05),
    "harsh": NoiseProfile(name="harsh", rate=0.10, npc_no_show=0.10),
}


def _uniforms(*parts: object) -> tuple[float, float, str]:
    """Two independent uniforms in [0, 1) and a short hex id, from the SHA-256 of ``parts``."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    scale = float(2**64)
    return int.from_bytes(digest[:8], "big") / scale, int.from_bytes(digest[8:16], "big") / scale, digest[16:20].hex()


@dataclass(frozen=True, kw_only=True)
class Decision:
    """One injected fault: its type, the call it hit, and the request id shown in its message."""

    fault: Fault
    tool: str
    call_index: int
    request_id: str

    def to_json(self) -> dict[str, Any]:
        """As recorded in a step and the episode's fault report."""
        return {"type": self.fault, "tool": self.tool, "call_index": self.call_index, "request_id": self.request_id}


def decide(profile: NoiseProfile, seed: int, tool: str, app: str, call_index: int, *, read: bool) -> Decision | None:
    """Whether call ``call_index`` of ``tool`` in the episode of ``seed`` faults, and how (pure)."""
    rate = profile.rate_for(tool, app)
    if rate <= 0.0 or tool == "submit":
        return None
    hit, pick, request_id = _uniforms("noise", seed, tool, call_index)
    if hit >= rate:
        return None
    allowed = [(f, w) for f, w in sorted(profile.weights.items()) if w > 0 and (read or f not in READ_ONLY_FAULTS)]
    total = sum(w for _, w in allowed)
    if total <= 0:
        return None
    point, acc = pick * total, 0.0
    fault: Fault = allowed[-1][0]  # type: ignore[assignment]
    for name, weight in allowed:
        acc += weight
        if point < acc:
            fault = name  # type: ignore[assignment]
            break
    return Decision(fault=fault, tool=tool, call_index=call_index, request_id=request_id)


def npc_no_show(profile: NoiseProfile, seed: int, npc: str, turn: int) -> bool:
    """Whether the NPC ``npc`` skips its ``turn``-th due turn (pure, like ``decide``)."""
    if profile.npc_no_show <= 0.0:
        return False
    hit, _, _ = _uniforms("npc_no_show", seed, npc, turn)
    return hit < profile.npc_no_show


def npc_absence(profile: NoiseProfile, seed: int, npc: str, attempt: int) -> float | None:
    """Working minutes NPC ``npc`` stays away instead of its ``attempt``-th due turn, or None (pure, seeded)."""
    if profile.npc_no_show <= 0.0:
        return None
    hit, length, _ = _uniforms("npc_no_show", seed, npc, attempt)
    return round(30.0 + 210.0 * length) if hit < profile.npc_no_show else None


def error_for(decision: Decision, app: str) -> dict[str, str]:
    """The error the agent sees for a failing fault: the code and message a production system would give."""
    rid = f"req-{decision.request_id}"
    messages = {
        "timeout": ("timeout", f"the {app} service did not answer within 30 s ({rid}); the request may be retried"),
        "rate_limited": (
            "rate_limited",
            f"429 Too Many Requests from {app}: rate limit exceeded, retry after 20 s ({rid})",
        ),
        "server_error": ("server_error", f"503 Service Unavailable: {app} backend error ({rid}); try again"),
        "permission_flake": (
            "forbidden",
            f"permission check failed: the access service did not respond ({rid}); this is usually transient",
        ),
    }
    code, message = messages[decision.fault]
    return {"code": code, "message": message}


def truncate(result: Any) -> Any | None:
    """``result`` with its longest list cut to half and ``partial: true``, or None if it has no list to cut."""
    if not isinstance(result, dict):
        return None
    lists = [(len(v), k) for k, v in result.items() if isinstance(v, list) and len(v) >= 2]
    if not lists:
        return None
    _, key = max(lists)
    out = dict(result)
    out[key] = result[key][: len(result[key]) // 2]
    out["partial"] = True
    out["warning"] = "partial results: the search backend timed out; retry for the full list"
    return out


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


class FaultGate:
    """One episode's side of the noise: the call counters, the reads it remembers, the faults injected so far.

    Args:
        profile: The episode's profile.
        seed: The episode's seed (the schedule is a pure function of it, the tool and the call index).
    """

    def __init__(self, profile: NoiseProfile, seed: int) -> None:
        self.profile = profile
        self.seed = seed
        self.reads = bool(profile.weights.get("partial_result") or profile.weights.get("stale_read"))
        self.faults: list[dict[str, Any]] = []
        self._calls: dict[str, int] = {}
        self._seen: dict[tuple[str, str], Any] = {}

    def decide(self, tool: str, app: str, write: bool) -> Decision | None:
        """This call's fault, if the profile schedules one (counts the call either way)."""
        index = self._calls.get(tool, 0)
        self._calls[tool] = index + 1
        return decide(self.profile, self.seed, tool, app, index, read=not write)

    def read(
        self, name: str, arguments: Mapping[str, Any], result: Any, decision: Decision | None
    ) -> tuple[Any, Decision | None]:
        """Apply a read fault to a successful read's result; remember the true result for later stale reads."""
        key = (name, _canonical(arguments))
        previous = self._seen.get(key)
        self._seen[key] = result
        if decision is None:
            return result, None
        if decision.fault == "partial_result":
            cut = truncate(result)
            return (result, None) if cut is None else (cut, decision)
        if decision.fault == "stale_read" and previous is not None and _canonical(previous) != _canonical(result):
            return previous, decision
        return result, None

    def record(self, step: int, decision: Decision) -> dict[str, Any]:
        """Note an injected fault at ``step``; returns its JSON form for the step record."""
        fault = decision.to_json()
        self.faults.append({"step": step, **fault})
        return fault

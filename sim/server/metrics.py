"""Prometheus metrics of one server, in a registry of its own (two servers in one process never mix counts)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# Served steps take from ~50 us (a read over a warm pipe) to seconds (a pipeline in the sandbox).
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


class Metrics:
    """What ``GET /admin/metrics`` exposes: live episodes, steps, step latency, rewards, faults, errors."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.live = Gauge("companysim_live_episodes", "Episodes currently held by the workers.", registry=r)
        self.episodes = Counter("companysim_episodes", "Episodes by how they left the server.", ["outcome"], registry=r)
        self.steps = Counter("companysim_steps", "Tool calls served, by protocol.", ["protocol"], registry=r)
        self.latency = Histogram(
            "companysim_step_latency_seconds", "Front-process time of one served step.", ["protocol"],
            buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.rewards = Histogram(
            "companysim_episode_reward", "Final rewards of ended episodes.",
            buckets=(0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0), registry=r,
        )  # fmt: skip
        self.faults = Counter("companysim_faults", "Faults injected into served steps, by type.", ["fault"], registry=r)
        self.errors = Counter("companysim_errors", "Refused calls and requests, by code.", ["code"], registry=r)
        self.worker_deaths = Counter("companysim_worker_deaths", "Worker processes that died.", registry=r)

    def text(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)

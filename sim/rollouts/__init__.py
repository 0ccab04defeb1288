"""Rollouts: many episodes in parallel (worker processes or Ray actors), and GRPO groups against a server."""

from __future__ import annotations

from sim.rollouts.runner import Job, LocalBackend, Rollout, Summary, jobs_for, play, run_rollouts, trace_name

__all__ = ["Job", "LocalBackend", "Rollout", "Summary", "jobs_for", "play", "run_rollouts", "trace_name"]

"""scenarios: task families (world, rng, difficulty) -> ScenarioInstance, in a registry with versioned ids."""

from scenarios.base import AgentEnv, Limits, ScenarioFamily, ScenarioInstance, ToolFailed, WorldDefaults
from scenarios.registry import make, register, registered

__all__ = [
    "AgentEnv",
    "Limits",
    "ScenarioFamily",
    "ScenarioInstance",
    "ToolFailed",
    "WorldDefaults",
    "make",
    "register",
    "registered",
]

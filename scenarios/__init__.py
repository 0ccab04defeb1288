"""scenarios: task families (world, rng, difficulty) -> ScenarioInstance, in a registry with versioned ids.

The contract is ``scenarios.base`` (ScenarioFamily, ScenarioInstance, AgentEnv, Limits, WorldDefaults,
ToolFailed); ``scenarios.registry`` maps versioned ids to lazy entry points; ``scenarios.check`` holds
``check_scenario``, the contract checker the tests run over every registered id. Families live one module
each in ``scenarios.library`` and are imported only when made.
"""

from scenarios.base import (
    AgentEnv,
    FamilyFactory,
    Limits,
    ScenarioFamily,
    ScenarioInstance,
    ToolFailed,
    WorldDefaults,
)
from scenarios.check import ScenarioContractError, check_scenario
from scenarios.registry import Registration, ScenarioRegistryError, make, register, registered

__all__ = [
    "AgentEnv",
    "FamilyFactory",
    "Limits",
    "Registration",
    "ScenarioContractError",
    "ScenarioFamily",
    "ScenarioInstance",
    "ScenarioRegistryError",
    "ToolFailed",
    "WorldDefaults",
    "check_scenario",
    "make",
    "register",
    "registered",
]

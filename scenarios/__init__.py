"""scenarios: task families (world, rng, difficulty) -> ScenarioInstance, in a registry with versioned ids."""

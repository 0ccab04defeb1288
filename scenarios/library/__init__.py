"""Scenario families, one module each (build, rubric, oracle); the registry imports them lazily by id."""

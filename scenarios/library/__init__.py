"""Scenario families, one module each (build, rubric, oracle)."""

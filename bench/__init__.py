"""Benchmarks: ``python -m bench [names...]`` writes bench/results/<name>.json and prints a table."""

"""Thin adapters from ``sim.episode.Episode`` to trainer APIs (each imports its framework lazily)."""

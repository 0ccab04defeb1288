"""sim: the engine and its faces: SimClock, Episode, traces and replay, adapters, and the ``companysim`` CLI."""

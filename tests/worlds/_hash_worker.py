"""Reads one WorldSpec JSON per line on stdin; prints the generated world's state hash per line."""

import sys

from worlds.dump import state_hash
from worlds.generate import generate
from worlds.rows import load_in_memory
from worlds.spec import WorldSpec


def world_hash(spec: WorldSpec) -> str:
    engine = load_in_memory(generate(spec))
    with engine.connect() as conn:
        h = state_hash(conn)
    engine.dispose()
    return h


for line in sys.stdin:
    sys.stdout.write(world_hash(WorldSpec.model_validate_json(line)) + "\n")
    sys.stdout.flush()

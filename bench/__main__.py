"""Run benchmark modules: ``python -m bench [worlds episode ...]``."""

from __future__ import annotations

import importlib
import sys

MODULES = (
    "worlds",
    "episode",
    "apps",
    "code",
    "npcs",
    "npc_families",
    "coevolve",
    "grading",
    "compare_tau",
    "adapters",
    "llm",
    "server",
    "web",
    "rollouts",
    "tasks",
)


def main(argv: list[str]) -> int:
    unknown = [name for name in argv if name not in MODULES]
    if unknown:  # a typo is the user's mistake, not a bench to skip: say so before anything runs
        print(f"error: unknown bench {unknown[0]!r}; the benches are: {', '.join(MODULES)}", file=sys.stderr)
        return 2
    names = argv or list(MODULES)
    for name in names:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ImportError as exc:
            print(f"bench {name}: skipped ({exc})")
            continue
        path = module.run()
        print(f"bench {name}: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

import os

import pytest

from mcp_tools.sandbox import get_sandbox
from sim.episode import Episode
from worlds.store import WorldStore


def require_sandbox() -> None:
    """Skip a code family's test module where no code sandbox works; under ``CI=true`` fail instead.

    The code families grade by running tests in the sandbox, so without one their tests say nothing; CI installs
    bubblewrap and python3-pytest (.ci/run), so there a missing sandbox is a broken machine, not a skip.
    """
    if not get_sandbox().available():
        message = "no working code sandbox (bubblewrap) here"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI=true: it must work; .ci/run installs bubblewrap and python3-pytest)")
        pytest.skip(message)


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """One base-world cache for the whole session: worlds are generated once per spec."""
    return WorldStore(tmp_path_factory.mktemp("worlds"))


@pytest.fixture(scope="module")
def episode(request, store):
    """One episode of the test module's ``FAMILY`` for all its tests (a module may define its own instead)."""
    ep = Episode(request.module.FAMILY, store=store)
    yield ep
    ep.close()


class Tampering:
    """The oracle's env with one slip: each call's arguments pass through ``change`` and each result through ``seen``.

    ``change(name, arguments)`` returns the arguments to call with, or None to skip the call (the oracle then sees
    ``skipped``); ``seen(name, result)`` is what the oracle reads back. The families' tests use it to make exactly
    one mistake and check that it costs exactly the checks it should.
    """

    def __init__(self, env, change=lambda n, a: a, seen=lambda n, out: out, skipped=None):
        self.env, self.change, self.seen, self.skipped = env, change, seen, skipped
        self.prompt, self.actor = env.prompt, env.actor

    @property
    def done(self):
        return self.env.done

    def call(self, name, /, **arguments):
        args = self.change(name, arguments)
        return self.skipped if args is None else self.seen(name, self.env.call(name, **args))


def oracle_explains_others_zero(family, store, seeds=range(4), level=lambda seed: seed):
    """An impossible variant's contract per seed (difficulty ``level(seed)``): its oracle says why and scores 1
    with the verifier agreeing; the no-op, random and every cheating agent score at most 0.1.

    Shared by the impossible-variant test modules, so each states only which families and seeds it plays.
    """
    from sim.agents import run_agent
    from sim.calibrate import verify
    from sim.cheaters import CHEATERS
    from sim.episode import Episode

    with Episode(family, store=store) as episode:
        for seed in seeds:
            options = {"difficulty": level(seed)}
            oracle = run_agent(episode, "oracle", seed, options)
            assert oracle.value == 1.0, [c.evidence for c in oracle.checks if not c.passed]
            verdict = verify(episode)
            assert verdict is not None and verdict.solved, verdict
            for agent in ("noop", "random", *(f"cheat-{n}" for n in CHEATERS)):
                assert run_agent(episode, agent, seed, options).value <= 0.1, agent

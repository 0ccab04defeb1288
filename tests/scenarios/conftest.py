import pytest

from worlds.store import WorldStore


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """One base-world cache for the whole session: worlds are generated once per spec."""
    return WorldStore(tmp_path_factory.mktemp("worlds"))


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

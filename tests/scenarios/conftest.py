import pytest

from worlds.store import WorldStore


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """One base-world cache for the whole session: worlds are generated once per spec."""
    return WorldStore(tmp_path_factory.mktemp("worlds"))

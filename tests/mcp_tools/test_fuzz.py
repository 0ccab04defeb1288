"""Schema-driven fuzzing of every tool: hostile arguments give an AppError and leave the state unchanged."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_tools.base import call_tool
from mcp_tools.company import APPS, company_specs
from mcp_tools.errors import AppError

ODD = st.sampled_from(
    [
        "",
        " ",
        "\u202e",
        "ZERO\u200bWIDTH",
        "💥" * 50,
        "../../etc/passwd",
        "'; DROP TABLE tickets;--",
        "A" * 20_001,
        "@@@",
        "NOPE-0",
        "town-square\x00",
        "ＥＮＧ-１",
    ]
)
WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def hostile(spec):
    props = spec.parameters["properties"]
    value = st.one_of(ODD, WRONG, st.text(max_size=40))
    return st.fixed_dictionaries({}, optional={**{k: value for k in props}, "unexpected": value, "id": st.integers()})


@pytest.fixture(scope="module")
def episode(tmp_path_factory):
    from sim.episode import Episode
    from worlds.store import WorldStore

    # Expose every company app, not just the scenario's two, so each tool is fuzzed through Episode.step.
    ep = Episode("triage-tickets-v0", store=WorldStore(tmp_path_factory.mktemp("fuzz")), apps=tuple(APPS))
    ep.reset(seed=0)
    yield ep
    ep.close()


@pytest.mark.parametrize("name", sorted(company_specs()))
def test_fuzz__hostile_arguments_give_tool_errors_and_change_nothing(episode, name):
    spec = company_specs()[name]

    @settings(
        max_examples=12,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(args=hostile(spec))
    def run(args):
        if episode.done:
            episode.reset(seed=0)
        before = episode.world.state_hash()
        obs, _, _, _, info = episode.step({"name": name, "arguments": args})
        if info["error"] is not None:
            assert obs.startswith(f"error [{info['error']['code']}]")
            assert info["error"]["code"] != "internal", obs
            assert episode.world.state_hash() == before

    run()


def test_fuzz__ids_from_another_world_are_not_found(app):
    for name, args in [
        ("tickets_get", {"key": "ZZZ-424242"}),
        ("chat_read_thread", {"post_id": 10**9}),
        ("chat_read_channel", {"channel": "1__999999"}),
    ]:
        with pytest.raises(AppError) as info:
            call_tool(company_specs()[name], args, app.ctx())
        assert info.value.code == "not_found"

"""The Mattermost v4 facade driven by the real ``mattermostdriver`` client, seen through the episode's tools."""

import json

import pytest

pytest.importorskip("mattermostdriver")
from mattermostdriver.exceptions import NoAccessTokenProvided, ResourceNotFound  # noqa: E402

from sim.episode import Episode  # noqa: E402
from sim.errors import SimError  # noqa: E402
from sim.serve import check_bind  # noqa: E402
from tests.sim.mattermost_server import TOKEN, driver, serving  # noqa: E402


@pytest.fixture
def served(store):
    episode = Episode("triage-tickets-v0", store=store)
    backend, port, stop = serving(episode, 2)
    info = {"actor": {"username": backend.status()["actor"]}}
    yield episode, info, port
    stop()
    episode.close()


_driver = driver


def test_driver__logs_in_reads_posts_replies_reacts_and_the_tools_see_it(served):
    episode, info, port = served
    me = info["actor"]["username"]
    d = _driver(port, me)
    user = d.login()
    assert user["username"] == me and d.client.token == TOKEN
    team = d.teams.get_user_teams("me")[0]
    channel = d.channels.get_channel_by_name_and_team_name(team["name"], "town-square")
    history = d.posts.get_posts_for_channel(channel["id"])
    assert history["order"] and all(pid in history["posts"] for pid in history["order"])
    made = d.posts.create_post({"channel_id": channel["id"], "message": "hello from a real client"})
    reply = d.posts.create_post({"channel_id": channel["id"], "message": "and a reply", "root_id": made["id"]})
    d.reactions.create_reaction({"user_id": user["id"], "post_id": made["id"], "emoji_name": "thumbsup"})
    thread = d.posts.get_thread(made["id"])
    assert [thread["posts"][p]["message"] for p in sorted(thread["order"])] == [
        "hello from a real client",
        "and a reply",
    ]
    # The same episode's tools see what the client did, and the trace recorded it as steps.
    obs, _, _, _, step = episode.step({"name": "chat_read_thread", "arguments": {"post_id": int(made["id"])}})
    seen = json.loads(obs)
    assert step["error"] is None and [p["message"] for p in seen["posts"]] == [
        "hello from a real client",
        "and a reply",
    ]
    assert seen["posts"][0]["reactions"] == [f"thumbsup by {me}"] and seen["posts"][1]["id"] == int(reply["id"])
    names = [s["action"]["name"] for s in episode.steps]
    assert {"chat_post", "chat_reply", "chat_react", "chat_read_channel"} <= set(names)


def test_driver__errors_map_to_mattermost_statuses_and_change_nothing(served):
    episode, info, port = served
    bad = _driver(port, info["actor"]["username"], password="wrong")
    with pytest.raises(Exception) as failed:
        bad.login()
    assert (
        "401" in str(failed.value)
        or "login failed" in str(failed.value).lower()
        or failed.type is NoAccessTokenProvided
    )
    d = _driver(port, info["actor"]["username"])
    d.login()
    before = episode.world.state_hash()
    with pytest.raises(ResourceNotFound):
        d.channels.get_channel_by_name_and_team_name(d.teams.get_user_teams("me")[0]["name"], "no-such-channel")
    with pytest.raises(ResourceNotFound):
        d.posts.get_post("999999999")
    assert episode.world.state_hash() == before


def test_websocket__answers_the_challenge_with_hello(served):
    import asyncio

    import websockets

    _, _, port = served

    async def talk():
        async with websockets.connect(f"ws://127.0.0.1:{port}/api/v4/websocket") as ws:
            await ws.send(json.dumps({"seq": 1, "action": "authentication_challenge", "data": {"token": TOKEN}}))
            first, second = json.loads(await ws.recv()), json.loads(await ws.recv())
            return first, second

    ok, hello = asyncio.run(talk())
    assert ok["status"] == "OK" and hello["event"] == "hello" and hello["seq"] == 0


def test_serve__refuses_a_public_bind_without_a_token():
    with pytest.raises(SimError, match="--token"):
        check_bind("0.0.0.0", None)  # noqa: S104
    check_bind("0.0.0.0", "secret")  # noqa: S104
    check_bind("127.0.0.1", None)


def test_driver__direct_channel_patch_search_delete_and_user_lookup(served):
    episode, info, port = served
    d = _driver(port, info["actor"]["username"])
    me = d.login()
    team = d.teams.get_user_teams("me")[0]
    other = next(u for u in d.users.search_users({"term": ""}) if u["id"] != me["id"])
    assert d.users.get_user_by_username(other["username"])["id"] == other["id"]
    dm = d.channels.create_direct_message_channel([me["id"], other["id"]])
    assert dm["type"] == "D"
    posted = d.posts.create_post({"channel_id": dm["id"], "message": "draft wording"})
    assert d.posts.patch_post(posted["id"], {"message": "final wording"})["message"] == "final wording"
    found = d.posts.search_for_team_posts(team["id"], {"terms": "final wording"})
    assert posted["id"] in found["order"]
    d.posts.delete_post(posted["id"])
    with pytest.raises(ResourceNotFound):
        d.posts.get_post(posted["id"])
    members = d.channels.get_channel_members(dm["id"])
    assert sorted(m["user_id"] for m in members) == sorted([me["id"], other["id"]])
    names = [s["action"]["name"] for s in episode.steps]
    assert {"chat_open_direct", "chat_edit_post", "chat_search_posts", "chat_delete_post"} <= set(names)

"""The routes clients expect beyond the basics (users, teams, unread counts, files), the WebSocket ``posted``
events, and serving many episodes: each driven through the real ``mattermostdriver`` client."""

import asyncio
import json
import threading

import pytest
import requests

pytest.importorskip("mattermostdriver")
from mattermostdriver.exceptions import InvalidOrMissingParameters, NotEnoughPermissions  # noqa: E402

from sim.episode import Episode  # noqa: E402
from tests.sim.mattermost_server import TOKEN, driver, serving  # noqa: E402


@pytest.fixture
def served(store):
    episode = Episode("triage-tickets-v0", store=store)
    backend, port, stop = serving(episode, 2)
    d = driver(port, backend.status()["actor"])
    me = d.login()
    yield episode, backend, port, d, me
    stop()
    episode.close()


def test_users_and_teams__paged_lists_by_id_and_channel_membership(served):
    episode, _, _, d, me = served
    first, second = d.users.get_users({"page": 0, "per_page": 5}), d.users.get_users({"page": 1, "per_page": 5})
    names = [u["username"] for u in first + second]
    assert len(names) == 10 and names == sorted(names) and len(set(names)) == 10
    assert d.users.get_user(me["id"])["username"] == me["username"] == d.users.get_user("me")["username"]
    by_ids = d.users.get_users_by_ids([first[1]["id"], first[0]["id"]])
    assert {u["username"] for u in by_ids} == {first[0]["username"], first[1]["username"]}

    team = d.teams.get_user_teams("me")[0]
    assert d.teams.get_team(team["id"])["name"] == team["name"] == d.teams.get_team_by_name(team["name"])["id"]
    assert [t["name"] for t in d.teams.get_teams()] == [team["name"]]
    mine = d.channels.get_channels_for_user("me", team["id"])
    town = next(c for c in mine if c["name"] == "town-square")
    members = {u["username"] for u in d.users.get_users({"in_channel": town["id"], "per_page": 200})}
    outside = {u["username"] for u in d.users.get_users({"not_in_channel": town["id"], "per_page": 200})}
    listed = json.loads(episode.step({"name": "chat_list_members", "arguments": {"channel": "town-square"}})[0])
    assert members == {m["username"] for m in listed["members"]} and not members & outside
    # Someone else's channels are not ours to list.
    with pytest.raises(NotEnoughPermissions):
        d.channels.get_channels_for_user(first[0]["id"] if first[0]["id"] != me["id"] else first[1]["id"], team["id"])
    with pytest.raises(InvalidOrMissingParameters):
        d.users.get_users({"per_page": 0})


def test_unread__counts_drop_when_the_channel_is_viewed(served):
    episode, _, _, d, me = served
    team = d.teams.get_user_teams("me")[0]
    town = d.channels.get_channel_by_name_and_team_name(team["name"], "town-square")
    before = d.channels.get_unread_messages("me", town["id"])
    tool = json.loads(episode.step({"name": "chat_unread", "arguments": {}})[0])
    expected = next(c for c in tool["channels"] if c["name"] == "town-square")
    assert before["msg_count"] == expected["unread"] > 0 and before["mention_count"] == expected["mentions"]
    assert d.teams.get_team_unreads_for_user("me")[0]["msg_count"] == tool["unread"]
    viewed = d.channels.view_channel("me", {"channel_id": town["id"]})
    assert viewed["status"] == "OK" and town["id"] in viewed["last_viewed_at_times"]
    assert d.channels.get_unread_messages("me", town["id"])["msg_count"] == 0
    memberships = {m["channel_id"]: m for m in d.channels.get_channel_members_for_user("me", team["id"])}
    assert memberships[town["id"]]["last_viewed_at"] == viewed["last_viewed_at_times"][town["id"]]
    # The marker is a write the trace records; the counts are reads.
    assert [s["action"]["name"] for s in episode.steps].count("chat_mark_read") == 1


def test_files__upload_attach_download_and_metadata(served):
    episode, _, _, d, me = served
    team = d.teams.get_user_teams("me")[0]
    town = d.channels.get_channel_by_name_and_team_name(team["name"], "town-square")
    data = "Sprint notes: INF backlog reviewed. Größe ✓\n".encode() + bytes(range(256))
    uploaded = d.files.upload_file(town["id"], {"files": ("notes.txt", data)})["file_infos"][0]
    assert uploaded["name"] == "notes.txt" and uploaded["size"] == len(data) and uploaded["mime_type"] == "text/plain"
    post = d.posts.create_post({"channel_id": town["id"], "message": "notes attached", "file_ids": [uploaded["id"]]})
    assert post["file_ids"] == [uploaded["id"]] and post["metadata"]["files"][0]["name"] == "notes.txt"
    got = d.files.get_file(uploaded["id"])
    assert got.content == data and "notes.txt" in got.headers["Content-Disposition"]
    meta = d.files.get_file_metadata(uploaded["id"])
    assert meta["post_id"] == post["id"] and meta["user_id"] == me["id"] and meta["channel_id"] == town["id"]
    # The episode's own tools see the attachment.
    seen = json.loads(episode.step({"name": "chat_get_post", "arguments": {"post_id": int(post["id"])}})[0])
    assert seen["files"] == [
        {"id": int(uploaded["id"]), "name": "notes.txt", "mime_type": "text/plain", "size": len(data)}
    ]


def test_files__a_bad_upload_is_refused_and_changes_nothing(served):
    episode, _, port, d, _ = served
    team = d.teams.get_user_teams("me")[0]
    town = d.channels.get_channel_by_name_and_team_name(team["name"], "town-square")
    before = episode.world.state_hash()
    with pytest.raises(InvalidOrMissingParameters):
        d.files.upload_file(town["id"], {"files": ("../../etc/passwd", b"root")})
    too_big = requests.post(
        f"http://127.0.0.1:{port}/api/v4/files",
        params={"channel_id": town["id"], "filename": "big.bin"},
        data=b"\0" * (21 * 1024 * 1024),
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=60,
    )
    assert too_big.status_code == 413
    assert episode.world.state_hash() == before


def _listen(port, token, until):
    """Run mattermostdriver's websocket in a thread; collect events until ``until(event)``; returns (events, thread)."""
    events, ws_driver = [], driver(port, "", timeout=1)
    ws_driver.client.token = token

    async def handler(message):
        event = json.loads(message)
        events.append(event)
        if until(event):
            ws_driver.disconnect()

    def run():
        asyncio.set_event_loop(asyncio.new_event_loop())
        ws_driver.init_websocket(handler)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return events, thread


def _posted_by(event, user_id):
    return event.get("event") == "posted" and json.loads(event["data"]["post"])["user_id"] == user_id


def test_websocket__a_coworker_reply_arrives_as_a_posted_event(store):
    episode = Episode("triage-tickets-v0", store=store, npcs="cooperative")
    backend, port, stop = serving(episode, 2)
    try:
        d = driver(port, backend.status()["actor"])
        me = d.login()
        other = d.users.get_user_by_username("michelle.adams")  # works New York hours; the day starts 09:00 UTC
        events, thread = _listen(port, TOKEN, lambda e: _posted_by(e, other["id"]))
        for _ in range(100):
            if any(e.get("event") == "hello" for e in events):
                break
            threading.Event().wait(0.05)
        dm = d.channels.create_direct_message_channel([me["id"], other["id"]])
        d.posts.create_post({"channel_id": dm["id"], "message": "Hi Michelle, when are you free this week?"})
        for _ in range(12):  # let the simulated morning pass in New York
            if not thread.is_alive():
                break
            d.client.post("/companysim/wait", {"minutes": 60})
        thread.join(timeout=15)
        posted = [e for e in events if e.get("event") == "posted"]
        mine, theirs = posted[0], next(e for e in posted if _posted_by(e, other["id"]))
        assert json.loads(mine["data"]["post"])["message"] == "Hi Michelle, when are you free this week?"
        reply = json.loads(theirs["data"]["post"])
        assert reply["user_id"] == other["id"] and reply["channel_id"] == dm["id"]
        assert theirs["data"]["sender_name"] == "@michelle.adams" and theirs["broadcast"]["channel_id"] == dm["id"]
        assert [e["seq"] for e in events if "event" in e] == list(range(len([e for e in events if "event" in e])))
        # The reply is in the episode's world as the coworker's post, and the trace has the waits that let it happen.
        thread_posts = json.loads(episode.step({"name": "chat_read_channel", "arguments": {"channel": dm["name"]}})[0])
        assert (
            thread_posts["posts"][-1]["id"] == int(reply["id"])
            and thread_posts["posts"][-1]["author"] == "michelle.adams"
        )
    finally:
        stop()
        episode.close()

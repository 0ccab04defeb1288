import pytest
from sqlalchemy import select

from mcp_tools.base import Actor
from mcp_tools.errors import AppError
from tests.mcp_tools.conftest import T0
from worlds.schema import Channel, ChannelMember, Mention


def _code(fn):
    with pytest.raises(AppError) as info:
        fn()
    return info.value.code


def test_post__appears_in_history_with_mentions(app):
    other = app.outsider.username
    posted = app.call("chat_post", channel="town-square", message=f"hello @{other}")
    history = app.call("chat_read_channel", channel="town-square", limit=5)["posts"]
    assert history[-1]["id"] == posted["id"] and history[-1]["author"] == app.lead.username
    mentioned = app.session.scalars(select(Mention.employee_id).where(Mention.post_id == posted["id"])).all()
    assert mentioned == [app.outsider.employee_id]


def test_reply__lands_in_the_thread_and_react_twice_conflicts(app):
    root = app.call("chat_post", channel="off-topic", message="lunch?")
    app.call("chat_reply", post_id=root["id"], message="yes")
    thread = app.call("chat_read_thread", post_id=root["id"])["posts"]
    assert [p["message"] for p in thread] == ["lunch?", "yes"]
    app.call("chat_react", post_id=root["id"], emoji="thumbsup")
    assert _code(lambda: app.call("chat_react", post_id=root["id"], emoji="thumbsup")) == "conflict"


def test_direct_message__creates_one_channel_once(app):
    app.call("chat_direct_message", username=app.outsider.username, message="hi")
    app.call("chat_direct_message", username=app.outsider.username, message="again")
    a, b = sorted((app.lead.employee_id, app.outsider.employee_id))
    channels = app.session.scalars(select(Channel.id).where(Channel.name == f"{a}__{b}")).all()
    assert len(channels) == 1
    assert len(app.call("chat_read_channel", channel=f"{a}__{b}")["posts"]) >= 2


def test_private_channel__forbidden_to_non_members_and_hidden_from_search(app):
    private = app.session.scalar(select(Channel).where(Channel.type == "P").order_by(Channel.id))
    members = set(app.session.scalars(select(ChannelMember.employee_id).where(ChannelMember.channel_id == private.id)))
    assert app.outsider.employee_id not in members
    assert _code(lambda: app.call("chat_read_channel", actor=app.outsider, channel=private.name)) == "forbidden"
    assert private.name not in {c["name"] for c in app.call("chat_list_channels", actor=app.outsider)["channels"]}


@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        ("chat_post", {"channel": "town-square", "message": ""}, "invalid_argument"),
        ("chat_post", {"channel": "town-square", "message": "x" * 16_001}, "invalid_argument"),
        ("chat_post", {"channel": "no-such-channel", "message": "x"}, "not_found"),
        ("chat_reply", {"post_id": 99_999_999, "message": "x"}, "not_found"),
        ("chat_react", {"post_id": 1, "emoji": "not an emoji!"}, "invalid_argument"),
        ("chat_direct_message", {"username": "nobody.here", "message": "x"}, "not_found"),
    ],
)
def test_bad_input__gives_the_code_and_changes_nothing(app, tool, args, code):
    h = app.hash()
    assert _code(lambda: app.call(tool, **args)) == code
    assert app.hash() == h


def _unread(app, actor=None):
    return {c["name"]: (c["unread"], c["mentions"]) for c in app.call("chat_unread", actor=actor)["channels"]}


def test_unread__counts_others_posts_since_the_marker_and_mentions_among_them(app):
    from datetime import timedelta

    from tests.mcp_tools.conftest import T0

    # Never marked read: everything others posted since lena joined town-square (posts 1 and 2; 3 is hers).
    assert _unread(app) == {"town-square": (2, 0), "off-topic": (0, 0), "leads": (0, 0)}
    app.call("chat_mark_read", channel="town-square")
    app.clock.set(T0 + timedelta(minutes=5))
    app.call("chat_post", actor=app.outsider, channel="town-square", message="@lena.lead can you look at ENG-2?")
    app.call("chat_post", actor=app.outsider, channel="town-square", message="no rush")
    app.call("chat_post", channel="town-square", message="on it")  # her own post is never unread
    counts = app.call("chat_unread")
    assert _unread(app)["town-square"] == (2, 1) and counts["unread"] == 2 and counts["mentions"] == 1
    app.clock.set(T0 + timedelta(minutes=6))
    marked = app.call("chat_mark_read", channel="town-square")
    assert marked["last_read_at"] == (T0 + timedelta(minutes=6)).isoformat()
    assert _unread(app)["town-square"] == (0, 0)


def test_mark_read__needs_membership_and_changes_nothing_when_refused(app):
    h = app.hash()
    assert _code(lambda: app.call("chat_mark_read", actor=app.outsider, channel="off-topic")) == "forbidden"
    assert _code(lambda: app.call("chat_mark_read", channel="no-such-channel")) == "not_found"
    assert app.hash() == h


def test_files__upload_attach_read_back_and_visibility(app):
    import base64

    data = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    up = app.call("chat_upload_file", channel="leads", name="chart.png", content_base64=base64.b64encode(data).decode())
    assert up["mime_type"] == "image/png" and up["size"] == len(data) and up["post_id"] is None
    # A pending upload is the uploader's alone; a member of the channel cannot see it yet.
    assert _code(lambda: app.call("chat_get_file", actor=app.ceo, file_id=up["id"])) == "not_found"
    posted = app.call("chat_post", channel="leads", message="", file_ids=[up["id"]])
    assert posted["files"] == [{"id": up["id"], "name": "chart.png", "mime_type": "image/png", "size": len(data)}]
    got = app.call("chat_get_file", actor=app.ceo, file_id=up["id"])
    assert base64.b64decode(got["content_base64"]) == data and got["post_id"] == posted["id"]
    assert got["uploader"] == "lena.lead" and got["channel"] == "leads"
    # The private channel's file stays out of reach of a non-member; a post without files has no "files" key.
    assert _code(lambda: app.call("chat_get_file", actor=app.outsider, file_id=up["id"])) == "forbidden"
    history = app.call("chat_read_channel", channel="leads")["posts"]
    assert history[-1]["files"][0]["id"] == up["id"] and "files" not in history[0]
    # Attached once: a second post cannot claim it again.
    again = lambda: app.call("chat_post", channel="leads", message="again", file_ids=[up["id"]])  # noqa: E731
    assert _code(again) == "conflict"


@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        ("chat_upload_file", {"channel": "off-topic", "name": "a.txt", "content_base64": "no!"}, "invalid_argument"),
        ("chat_upload_file", {"channel": "off-topic", "name": "../pw", "content_base64": "eA=="}, "invalid_argument"),
        ("chat_upload_file", {"channel": "town-square", "name": "a\nb", "content_base64": "eA=="}, "invalid_argument"),
        ("chat_upload_file", {"channel": "town-square", "name": "", "content_base64": "eA=="}, "invalid_argument"),
        ("chat_upload_file", {"channel": "leads", "name": "a.txt", "content_base64": "eA=="}, "forbidden"),
        ("chat_upload_file", {"channel": "nowhere", "name": "a.txt", "content_base64": "eA=="}, "not_found"),
        ("chat_post", {"channel": "town-square", "message": "x", "file_ids": [424242]}, "not_found"),
        ("chat_post", {"channel": "town-square", "message": "x", "file_ids": [1, 2, 3, 4, 5, 6]}, "invalid_argument"),
        ("chat_post", {"channel": "town-square", "message": "", "file_ids": []}, "invalid_argument"),
        ("chat_get_file", {"file_id": 424242}, "not_found"),
    ],
)
def test_files__bad_input_gives_the_code_and_changes_nothing(app, tool, args, code):
    h = app.hash()
    assert _code(lambda: app.call(tool, actor=app.outsider, **args)) == code
    assert app.hash() == h


def test_files__an_upload_to_another_channel_cannot_be_attached_here(app):
    up = app.call("chat_upload_file", channel="off-topic", name="plan.txt", content_base64="cGxhbgo=")
    h = app.hash()
    claim = lambda: app.call("chat_post", channel="town-square", message="see plan", file_ids=[up["id"]])  # noqa: E731
    assert _code(claim) == "conflict"
    assert app.hash() == h


def _members(app, channel):
    return [m["username"] for m in app.call("chat_list_members", channel=channel)["members"]]


def test_add_member__a_member_adds_to_private_and_public_channels_once(app):
    assert app.call("chat_add_member", channel="leads", username="@dev.one") == {"channel": "leads", "added": "dev.one"}
    assert "dev.one" in _members(app, "leads")
    assert (
        app.call("chat_read_channel", actor=Actor.load(app.session, "dev.one"), channel="leads")["channel"] == "leads"
    )
    app.call("chat_add_member", channel="off-topic", username="olaf.out")
    assert "olaf.out" in _members(app, "off-topic")
    assert _code(lambda: app.call("chat_add_member", channel="leads", username="dev.one")) == "conflict"


@pytest.mark.parametrize(
    ("actor", "tool", "args", "code"),
    [
        ("outsider", "chat_add_member", {"channel": "leads", "username": "olaf.out"}, "forbidden"),
        ("outsider", "chat_add_member", {"channel": "off-topic", "username": "olaf.out"}, "forbidden"),
        ("lead", "chat_add_member", {"channel": "off-topic", "username": "gone.away"}, "forbidden"),
        ("lead", "chat_add_member", {"channel": "off-topic", "username": "nobody.here"}, "not_found"),
        ("lead", "chat_add_member", {"channel": "no-such-channel", "username": "dev.one"}, "not_found"),
        ("lead", "chat_remove_member", {"channel": "town-square", "username": "dev.one"}, "invalid_argument"),
        ("lead", "chat_remove_member", {"channel": "leads", "username": "dev.two"}, "not_found"),
        ("outsider", "chat_remove_member", {"channel": "leads", "username": "cora.ceo"}, "forbidden"),
    ],
)
def test_membership__refusals_give_the_code_and_change_nothing(app, actor, tool, args, code):
    h = app.hash()
    assert _code(lambda: app.call(tool, actor=getattr(app, actor), **args)) == code
    assert app.hash() == h


def test_remove_member__takes_a_leaver_out_and_they_lose_the_private_channel(app):
    app.session.add(ChannelMember(channel_id=3, employee_id=6, joined_at=T0, last_viewed_at=None))
    app.session.flush()
    assert "gone.away" in _members(app, "leads")
    assert app.call("chat_remove_member", channel="leads", username="gone.away")["removed"] == "gone.away"
    assert "gone.away" not in _members(app, "leads")
    app.call("chat_remove_member", channel="off-topic", username="dev.one")
    dev = Actor.load(app.session, "dev.one")
    assert "off-topic" in {c["name"] for c in app.call("chat_list_channels", actor=dev)["channels"] if not c["member"]}

import pytest
from sqlalchemy import select

from mcp_tools.errors import AppError
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

"""A hypothesis state machine over the chat and ticket tools, checking invariants after every step."""

import json

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from sim.episode import Episode
from worlds.check import check_world
from worlds.store import WorldStore
from worlds.workflow import STATUSES, TRANSITIONS

STORE = None
TEXT = st.characters(blacklist_categories=("Cs", "Cc"))


def store():
    global STORE
    if STORE is None:
        import tempfile

        STORE = WorldStore(tempfile.mkdtemp(prefix="companysim-sm-"))
    return STORE


@pytest.fixture(scope="module", autouse=True)
def _remove_store():
    """The machine's world cache goes when the module is done (nothing is left in $TMPDIR)."""
    global STORE
    yield
    if STORE is not None:
        import shutil

        shutil.rmtree(STORE.data_dir, ignore_errors=True)
        STORE = None


class ToolsMachine(RuleBasedStateMachine):
    tickets = Bundle("tickets")
    posts = Bundle("posts")

    @initialize()
    def start(self):
        self.ep = Episode("triage-tickets-v0", store=store())
        self.ep.reset(seed=0)
        self.project = self.ep.instance.params["project"]
        self.status: dict[str, str] = {}
        self.channel_posts: dict[str, int] = {}

    def call(self, name, **args):
        if self.ep.done:
            self.ep.reset(seed=0)
            self.status.clear()
            self.channel_posts.clear()
        obs, _, _, _, info = self.ep.step({"name": name, "arguments": args})
        return (None if info["error"] else json.loads(obs)), info["error"]

    @rule(target=tickets, title=st.text(TEXT, min_size=1, max_size=30).filter(str.strip))
    def create(self, title):
        made, err = self.call("tickets_create", project=self.project, title=title)
        assert err is None, err
        self.status[made["key"]] = "backlog"
        return made["key"]

    @rule(key=tickets, status=st.sampled_from(STATUSES))
    def transition(self, key, status):
        if key not in self.status:
            return
        before = self.status[key]
        _, err = self.call("tickets_transition", key=key, status=status)
        if key not in self.status:  # the turn limit ended the episode and call() reset it: the ticket is gone
            assert err is not None and err["code"] == "not_found"
            return
        legal = status in TRANSITIONS[before]
        assert (err is None) == legal, (before, status, err)
        if legal:
            self.status[key] = status
        else:
            assert err["code"] in ("illegal_transition", "invalid_argument")

    @rule(
        target=posts,
        channel=st.sampled_from(["town-square", "incidents", "off-topic"]),
        text=st.text(TEXT, min_size=1, max_size=50).filter(str.strip),
    )
    def post(self, channel, text):
        made, err = self.call("chat_post", channel=channel, message=text)
        assert err is None, err
        self.channel_posts[channel] = self.channel_posts.get(channel, 0) + 1
        return made["id"]

    @rule(post_id=posts, text=st.text(TEXT, min_size=1, max_size=20).filter(str.strip))
    def reply(self, post_id, text):
        self.call("chat_reply", post_id=post_id, message=text)

    @invariant()
    def tickets_match_the_model(self):
        if not getattr(self, "status", None):
            return
        for key, status in sorted(self.status.items())[:5]:
            got, err = self.call("tickets_get", key=key)
            if err is None:
                assert got["status"] == status
                assert [h["to"] for h in got["history"]][-1] == status

    @invariant()
    def world_stays_valid(self):
        if hasattr(self, "ep") and self.ep._live is not None:
            self.ep._live.ctx.session.flush()
            with self.ep.world.connect() as conn:
                assert check_world(conn) == []

    def teardown(self):
        if hasattr(self, "ep"):
            self.ep.close()


ToolsMachine.TestCase.settings = settings(
    max_examples=8, stateful_step_count=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_tools_state_machine = ToolsMachine.TestCase

"""triage-tickets-v0 setup, rules and routing, on forks of a base world (no episode engine needed)."""

import json
from datetime import UTC, datetime, time

import pytest
from sqlalchemy import func, select

from scenarios.library.triage import MIX, Rule, TriageTickets, parse_rules, route, rules_text
from worlds.changelog import track
from worlds.clock import FixedClock
from worlds.schema import Channel, Employee, Post, Project, Ticket, TicketStatusChange
from worlds.seeding import Seeds
from worlds.spec import WorldSpec

FAMILY = TriageTickets()


@pytest.fixture(scope="module")
def base(store):
    world = store.base(WorldSpec(seed=0, employees=FAMILY.world.employees, history_days=FAMILY.world.history_days))
    yield world
    world.close()


@pytest.fixture
def build(base):
    """build(seed, difficulty) -> (instance, fork); forks are closed after the test."""
    forks = []

    def run(seed, difficulty=1):
        fork = base.fork()
        forks.append(fork)
        with fork.session() as session:
            clock = FixedClock(datetime.combine(base.spec.start_date, time(9, 0), tzinfo=UTC))
            track(session, clock=clock, tag="setup")
            instance = FAMILY.build(session, Seeds(seed), clock, difficulty)
            session.commit()
        return instance, fork

    yield run
    for fork in forks:
        fork.close()


def _rules_posts(fork, channel):
    with fork.session() as s:
        return s.execute(
            select(Post.message, Post.root_id, Post.is_pinned, Post.created_at)
            .join(Channel, Channel.id == Post.channel_id)
            .where(Channel.name == channel, Post.message.contains("triage rules"))
            .order_by(Post.created_at, Post.id)
        ).all()


def test_rules__text_round_trips_through_the_parser():
    rules = [
        Rule(keywords=("crash", "outage"), priority="critical", assignee="a.b", incident=True),
        Rule(keywords=("typo",), priority="low", assignee="c.d"),
        Rule(keywords=(), priority="medium", assignee="e.f"),
    ]
    assert parse_rules(rules_text("ENG", rules, updated=True, replaces="Mar 2")) == rules
    assert parse_rules(rules_text("ENG", rules, updated=False)) == rules


def test_route__first_matching_rule_wins_and_the_catch_all_takes_the_rest():
    rules = [
        Rule(keywords=("crash",), priority="critical", assignee="a.b", incident=True),
        Rule(keywords=("typo",), priority="low", assignee="c.d"),
        Rule(keywords=(), priority="medium", assignee="e.f"),
    ]
    assert route(rules, "Typo in title\nafter a CRASH").assignee == "a.b"
    assert route(rules, "nothing here").priority == "medium"


def test_triage_build__same_seed_same_task_other_seed_other_task(build):
    a, fork_a = build(7)
    b, fork_b = build(7)
    c, _ = build(8)
    assert (a.prompt, a.actor, a.params, a.rubric.fingerprint) == (b.prompt, b.actor, b.params, b.rubric.fingerprint)
    assert fork_a.state_hash() == fork_b.state_hash()
    assert (a.params, a.rubric.fingerprint) != (c.params, c.rubric.fingerprint)


@pytest.mark.parametrize("difficulty", [0, 1, 2, 3])
def test_triage_build__difficulty_sets_the_ticket_count(build, difficulty):
    instance, _ = build(3, difficulty)
    assert len(instance.params["expected"]) == sum(MIX[difficulty].values()) == (3, 5, 8, 12)[difficulty]
    assert instance.difficulty == difficulty
    assert instance.limits.max_turns >= 3 * len(instance.params["expected"]) + 4


@pytest.mark.parametrize("seed", range(6))
def test_triage_build__files_untriaged_backlog_tickets_in_the_project_with_a_critical_one(build, seed):
    instance, fork = build(seed, 2)
    params = instance.params
    assert params["critical"] and set(params["critical"]) <= set(params["expected"])
    with fork.session() as s:
        for key in sorted(params["expected"]):
            ticket = s.scalars(select(Ticket).where(Ticket.key == key)).one()
            assert (ticket.status, ticket.priority, ticket.assignee_id) == ("backlog", "none", None)
            assert s.scalar(select(Project.key).where(Project.id == ticket.project_id)) == params["project"]
            history = s.execute(
                select(TicketStatusChange.from_status, TicketStatusChange.to_status).where(
                    TicketStatusChange.ticket_id == ticket.id
                )
            ).all()
            assert history == [(None, "backlog")]
        project = s.scalars(select(Project).where(Project.key == params["project"])).one()
        top = s.scalar(select(func.max(Ticket.number)).where(Ticket.project_id == project.id))
        assert project.next_ticket_number == top + 1


@pytest.mark.parametrize("seed", range(6))
def test_triage_build__the_rules_post_in_the_team_channel_gives_the_expected_answer(build, seed):
    instance, fork = build(seed, 1)
    posts = _rules_posts(fork, instance.params["channel"])
    assert len(posts) == 1 and posts[0].is_pinned
    rules = parse_rules(posts[0].message)
    assert rules[-1].keywords == () and sum(r.incident for r in rules) == 1
    with fork.session() as s:
        for key, want in sorted(instance.params["expected"].items()):
            title, description = s.execute(select(Ticket.title, Ticket.description).where(Ticket.key == key)).one()
            rule = route(rules, f"{title}\n{description}")
            assert {"priority": rule.priority, "assignee": rule.assignee} == want
            assert (key in instance.params["critical"]) == rule.incident
        actor = s.scalars(select(Employee).where(Employee.username == instance.actor)).one()
        assert actor.active and f"@{actor.username}" in instance.prompt
    assert f"~{instance.params['channel']}" in instance.prompt and instance.params["project"] in instance.prompt


def test_triage_build__harder_levels_add_a_superseded_rules_post_and_lookalikes(build):
    instance, fork = build(4, 3)
    posts = _rules_posts(fork, instance.params["channel"])
    old, reply, new = posts
    assert old.created_at < new.created_at and not old.is_pinned and new.is_pinned
    assert reply.root_id is not None and reply.message.startswith("Superseded")
    assert new.message.startswith("UPDATED triage rules") and "replace the earlier rules" in new.message
    assert parse_rules(old.message) != parse_rules(new.message)
    with fork.session() as s:
        project_id = s.scalar(select(Project.id).where(Project.key == instance.params["project"]))
        triaged = s.scalars(
            select(Ticket).where(Ticket.project_id == project_id, Ticket.description.contains("Triaged last week"))
        ).all()
        assert len(triaged) == 1 and triaged[0].priority != "none" and triaged[0].assignee_id is not None
        elsewhere = s.scalars(
            select(Ticket).where(
                Ticket.project_id != project_id, Ticket.priority == "none", Ticket.created_at >= old.created_at
            )
        ).all()
        assert len(elsewhere) == 2 and not {t.key for t in elsewhere} & set(instance.params["expected"])


@pytest.mark.parametrize("difficulty", [0, 1, 2, 3])
def test_triage_build__hidden_answers_are_not_in_any_post_or_ticket(build, difficulty):
    instance, fork = build(5, difficulty)
    expected = instance.params["expected"]
    secrets = [json.dumps(expected, sort_keys=True), json.dumps(dict(instance.params), sort_keys=True)]
    secrets += [json.dumps({k: v}, sort_keys=True)[1:-1] for k, v in sorted(expected.items())]
    with fork.session() as s:
        texts = [
            *s.scalars(select(Post.message)),
            *s.scalars(select(Ticket.title)),
            *s.scalars(select(Ticket.description)),
        ]
    assert not [secret for secret in secrets if any(secret in text for text in texts)]

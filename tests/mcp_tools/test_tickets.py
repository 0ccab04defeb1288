"""The tickets app on the tiny company (see conftest): behaviour, access control, change log."""

import pytest
from sqlalchemy import select

from mcp_tools.errors import AppError
from worlds.schema import Project, Ticket


def _refused(fn):
    with pytest.raises(AppError) as info:
        fn()
    return info.value.code, str(info.value)


def test_search__filters_combine_and_order_by_number(app):
    assert [t["key"] for t in app.call("tickets_search", project="ENG")["tickets"]] == [
        "ENG-1",
        "ENG-2",
        "ENG-3",
        "ENG-4",
    ]
    found = app.call("tickets_search", project="ENG", label="frontend", assignee="dev.one", priority="critical")
    assert [t["key"] for t in found["tickets"]] == ["ENG-4"] and found["total"] == 1
    assert [t["key"] for t in app.call("tickets_search", status="in_progress")["tickets"]] == ["ENG-1", "OPS-1"]
    assert [t["key"] for t in app.call("tickets_search", assignee="")["tickets"]] == ["ENG-2"]
    assert [t["key"] for t in app.call("tickets_search", text="CRASH")["tickets"]] == ["ENG-1", "ENG-4"]
    assert app.call("tickets_search", text="%")["total"] == 0  # wildcards match literally
    page = app.call("tickets_search", limit=2, offset=2)
    assert page["total"] == 5 and [t["key"] for t in page["tickets"]] == ["ENG-3", "ENG-4"]
    assert page["tickets"][0] == {
        "key": "ENG-3",
        "title": "Export reports as CSV",
        "type": "story",
        "status": "done",
        "priority": "low",
        "assignee": "dev.two",
        "updated_at": page["tickets"][0]["updated_at"],
    }


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"status": "open"}, "invalid_argument"),
        ({"priority": "urgent"}, "invalid_argument"),
        ({"limit": 0}, "invalid_argument"),
        ({"project": "NOPE"}, "not_found"),
        ({"assignee": "nobody"}, "not_found"),
    ],
)
def test_search__bad_filters_are_refused_with_a_code(app, args, code):
    assert _refused(lambda: app.call("tickets_search", **args))[0] == code


def test_get__returns_labels_links_comments_by_time_and_history(app):
    t = app.call("tickets_get", key="eng-1")
    assert t["key"] == "ENG-1" and t["assignee"] == "dev.one" and t["reporter"] == "lena.lead"
    assert t["sprint"] == "ENG Sprint 2" and t["labels"] == ["frontend"]
    assert t["links"] == [{"kind": "relates_to (inward)", "key": "ENG-4"}]
    assert [c["body"] for c in t["comments"]] == ["Looking into it.", "Reproduced on staging."]
    assert [(h["from"], h["to"]) for h in t["history"]] == [
        (None, "backlog"),
        ("backlog", "todo"),
        ("todo", "in_progress"),
    ]
    assert _refused(lambda: app.call("tickets_get", key="ENG-99"))[0] == "not_found"


def test_create__allocates_the_next_key_and_logs_every_row(app):
    made = app.call("tickets_create", project="ENG", title=" New thing ", priority="high", labels="ux, ux, ")
    assert made["key"] == "ENG-5" and made["title"] == "New thing" and made["status"] == "backlog"
    assert made["labels"] == ["ux"] and made["reporter"] == "lena.lead" and made["history"][0]["to"] == "backlog"
    assert app.call("tickets_create", project="ENG", title="Another")["key"] == "ENG-6"
    assert app.session.scalar(select(Project.next_ticket_number).where(Project.key == "ENG")) == 7
    logged = {(c.table_name, c.op) for c in app.log()}
    assert logged == {
        ("tickets", "insert"),
        ("ticket_labels", "insert"),
        ("ticket_status_changes", "insert"),
        ("projects", "update"),
    }
    assert all(c.actor_id == 2 and c.tag == "test" for c in app.log())


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"title": "  "}, "invalid_argument"),
        ({"title": "x", "type": "chore"}, "invalid_argument"),
        ({"title": "x", "labels": "y" * 51}, "invalid_argument"),
        ({"title": "x", "assignee": "olaf.out"}, "invalid_argument"),
        ({"title": "x", "assignee": "gone.away"}, "invalid_argument"),
        ({"title": "x", "project": "NOPE"}, "not_found"),
    ],
)
def test_create__refusals_change_nothing(app, args, code):
    before = app.hash()
    assert _refused(lambda: app.call("tickets_create", **{"project": "ENG", **args}))[0] == code
    assert app.hash() == before and app.log_count() == 0


def test_transition__illegal_move_is_refused_with_allowed_statuses_and_nothing_changes(app):
    before = app.hash()
    code, message = _refused(lambda: app.call("tickets_transition", key="ENG-2", status="done"))
    assert code == "illegal_transition" and "allowed next: todo, wont_do" in message
    assert app.hash() == before
    assert app.call("tickets_transition", key="ENG-2", status="todo")["status"] == "todo"
    assert app.call("tickets_get", key="ENG-2")["history"][-1] == {
        "from": "backlog",
        "to": "todo",
        "by": "lena.lead",
        "at": app.clock.now().isoformat(),
    }


def test_transition__terminal_status_sets_and_reopening_clears_resolved_at(app):
    app.call("tickets_transition", key="ENG-2", status="wont_do")
    assert app.call("tickets_get", key="ENG-2")["resolved_at"] == app.clock.now().isoformat()
    app.call("tickets_transition", key="ENG-3", status="todo")
    assert app.call("tickets_get", key="ENG-3")["resolved_at"] is None


def test_update__changes_given_fields_and_refuses_atomically(app):
    out = app.call("tickets_update", key="ENG-2", priority="low", story_points=5)
    assert (
        out["priority"] == "low" and app.session.scalar(select(Ticket.story_points).where(Ticket.key == "ENG-2")) == 5
    )
    before = app.hash()
    code, _ = _refused(lambda: app.call("tickets_update", key="ENG-2", title="Renamed", story_points=4))
    assert code == "invalid_argument" and app.hash() == before


def test_access__outsider_reads_and_comments_but_cannot_change(app):
    assert app.call("tickets_get", actor=app.outsider, key="ENG-1")["key"] == "ENG-1"
    for tool, args in [
        ("tickets_update", {"key": "ENG-1", "priority": "low"}),
        ("tickets_transition", {"key": "ENG-1", "status": "in_review"}),
        ("tickets_assign", {"key": "ENG-1", "username": "dev.two"}),
        ("tickets_link", {"key": "ENG-1", "other_key": "ENG-2"}),
        ("tickets_set_sprint", {"key": "ENG-1", "sprint": ""}),
        ("tickets_create", {"project": "ENG", "title": "x"}),
    ]:
        code, message = _refused(lambda tool=tool, args=args: app.call(tool, actor=app.outsider, **args))
        assert code == "forbidden" and "olaf.out" in message and "ENG" in message, tool
    assert app.log_count() == 0
    made = app.call("tickets_comment", actor=app.outsider, key="ENG-1", body="+1")
    assert made["author"] == "olaf.out"
    assert app.call("tickets_get", key="ENG-1")["comments"][-1]["body"] == "+1"


def test_access__members_and_managers_may_write(app):
    assert app.call("tickets_transition", actor=app.dev, key="ENG-1", status="in_review")["status"] == "in_review"
    assert app.call("tickets_update", actor=app.lead, key="OPS-1", priority="critical")["priority"] == "critical"
    assert _refused(lambda: app.call("tickets_update", actor=app.dev, key="OPS-1", priority="low"))[0] == "forbidden"


def test_assign__only_active_project_members_or_nobody(app):
    code, message = _refused(lambda: app.call("tickets_assign", key="ENG-2", username="olaf.out"))
    assert code == "invalid_argument" and "member of project ENG" in message
    assert _refused(lambda: app.call("tickets_assign", key="ENG-2", username="gone.away"))[0] == "invalid_argument"
    assert app.call("tickets_assign", key="ENG-2", username="@dev.two")["assignee"] == "dev.two"
    assert app.call("tickets_assign", key="ENG-2", username="")["assignee"] is None


def test_link_and_sprints(app):
    assert app.call("tickets_link", key="ENG-2", other_key="ENG-1", kind="blocks") == {
        "key": "ENG-2",
        "kind": "blocks",
        "target": "ENG-1",
    }
    assert {"kind": "blocks", "key": "ENG-1"} in app.call("tickets_get", key="ENG-2")["links"]
    assert _refused(lambda: app.call("tickets_link", key="ENG-2", other_key="ENG-2"))[0] == "invalid_argument"
    assert _refused(lambda: app.call("tickets_link", key="ENG-2", other_key="ENG-1", kind="x"))[0] == "invalid_argument"
    sprints = app.call("tickets_list_sprints", project="ENG")["sprints"]
    assert [s["name"] for s in sprints] == ["ENG Sprint 1", "ENG Sprint 2"]
    assert app.call("tickets_set_sprint", key="ENG-2", sprint="ENG Sprint 2")["sprint"] == "ENG Sprint 2"
    assert _refused(lambda: app.call("tickets_set_sprint", key="ENG-2", sprint="OPS Sprint 1"))[0] == "not_found"
    assert app.call("tickets_set_sprint", key="ENG-2", sprint="")["sprint"] is None


def test_reads__write_no_change_log_rows_and_keep_the_state(app):
    before = app.hash()
    app.call("tickets_search", project="ENG")
    app.call("tickets_list_sprints", project="ENG")
    app.call("tickets_get", key="ENG-1")
    assert app.log_count() == 0 and app.hash() == before


def test_writes__log_exactly_the_changed_columns(app):
    app.call("tickets_update", key="ENG-2", priority="medium")  # unchanged value: no write at all
    assert app.log_count() == 0
    app.call("tickets_update", key="ENG-2", priority="low")
    (row,) = app.log()
    assert (row.table_name, row.op, sorted(row.changes)) == ("tickets", "update", ["priority", "updated_at"])
    assert row.changes["priority"] == ["medium", "low"]

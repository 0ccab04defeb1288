import pytest
from sqlalchemy import select

from mcp_tools.errors import AppError
from worlds.schema import Project, ProjectMember, Team


def _project_key(app):
    team = app.session.scalar(select(Team.id).where(Team.lead_id == app.lead.employee_id))
    return app.session.scalar(select(Project.key).where(Project.team_id == team).order_by(Project.id))


def _code(fn):
    with pytest.raises(AppError) as info:
        fn()
    return info.value.code, str(info.value)


def test_search__filters_combine_and_order_by_number(app):
    key = _project_key(app)
    found = app.call("tickets_search", project=key, limit=100)
    numbers = [int(t["key"].split("-")[1]) for t in found["tickets"]]
    assert numbers == sorted(numbers) and found["total"] == len(numbers)
    done = app.call("tickets_search", project=key, status="done", limit=100)
    assert all(t["status"] == "done" for t in done["tickets"])
    assert app.call("tickets_search", text="zzzz-nothing")["total"] == 0


def test_create__allocates_the_next_key_and_logs_the_change(app):
    key = _project_key(app)
    nxt = app.session.scalar(select(Project.next_ticket_number).where(Project.key == key))
    before = app.log_count()
    made = app.call("tickets_create", project=key, title="New thing", priority="high", labels=["ux"])
    assert made["key"] == f"{key}-{nxt}" and made["status"] == "backlog" and made["labels"] == ["ux"]
    assert app.log_count() > before


def test_transition__illegal_move_is_refused_with_allowed_statuses_and_nothing_changes(app):
    key = _project_key(app)
    made = app.call("tickets_create", project=key, title="Flow")
    h = app.hash()
    code, message = _code(lambda: app.call("tickets_transition", key=made["key"], status="done"))
    assert code == "illegal_transition" and "allowed next: todo, wont_do" in message
    assert app.hash() == h
    assert app.call("tickets_transition", key=made["key"], status="todo")["status"] == "todo"
    history = app.call("tickets_get", key=made["key"])["history"]
    assert [(h["from"], h["to"]) for h in history] == [(None, "backlog"), ("backlog", "todo")]


def test_access__non_member_cannot_change_tickets_but_can_comment(app):
    key = _project_key(app)
    target = app.call("tickets_search", project=key, limit=1)["tickets"][0]["key"]
    code, message = _code(lambda: app.call("tickets_update", actor=app.outsider, key=target, priority="low"))
    assert code == "forbidden" and "not a member" in message
    assert app.call("tickets_comment", actor=app.outsider, key=target, body="+1")["author"] == app.outsider.username


def test_assign__only_project_members(app):
    key = _project_key(app)
    target = app.call("tickets_search", project=key, limit=1)["tickets"][0]["key"]
    code, _ = _code(lambda: app.call("tickets_assign", key=target, username=app.outsider.username))
    assert code == "invalid_argument"
    member = app.session.scalar(
        select(ProjectMember.employee_id)
        .join(Project, Project.id == ProjectMember.project_id)
        .where(Project.key == key)
        .order_by(ProjectMember.id)
    )
    from worlds.schema import Employee

    username = app.session.get(Employee, member).username
    assert app.call("tickets_assign", key=target, username=username)["assignee"] == username


def test_reads__write_no_change_log_rows(app):
    before = app.log_count()
    key = _project_key(app)
    app.call("tickets_search", project=key)
    app.call("tickets_list_sprints", project=key)
    app.call("tickets_get", key=f"{key}-1")
    assert app.log_count() == before

"""The directory app on the tiny company: profiles, the org chart, and who may see restricted fields.

People: cora.ceo (executive, top), lena.lead (manager of dev.one, dev.two, gone.away), olaf.out (reports to
cora). The fixture makes olaf.out the HR person and gives everyone a private record.
"""

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert

from mcp_tools.base import Actor, ToolContext, call_tool
from mcp_tools.company import company_specs
from mcp_tools.errors import AppError
from worlds.clock import FixedClock
from worlds.schema import EmployeePrivate, EmployeeRole

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


@pytest.fixture
def d(app):
    rows = [
        dict(
            employee_id=i,
            salary_cents=100_000_00 + i,
            performance_rating=1 + i % 5,
            personal_email=f"p{i}@home.example",
            personal_phone=f"+1-555-000{i}",
        )
        for i in range(1, 7)
    ]
    app.session.execute(insert(EmployeePrivate), rows)
    app.session.execute(insert(EmployeeRole), [dict(employee_id=5, role="hr")])
    app.session.flush()
    app.hr = Actor.load(app.session, "olaf.out")
    return app


def test_profile__shows_public_fields_and_only_the_restricted_ones_allowed(d):
    own = d.call("directory_get_profile", actor=d.dev, username="dev.one")
    assert own["salary"]["annual"] == 100_000.03 and own["restricted"] == []
    other = d.call("directory_get_profile", actor=d.dev, username="dev.two")
    assert "salary" not in other and other["restricted"] == ["salary", "performance", "personal_contact"]
    assert other["manager"] == "lena.lead" and other["working_hours"] == "09:00-17:00"
    assert other["workdays"] == ["Mon", "Tue", "Wed", "Thu", "Fri"]


@pytest.mark.parametrize(
    ("viewer", "subject", "field", "allowed"),
    [
        ("lead", "dev.two", "performance", True),  # manager, reporting line
        ("lead", "dev.two", "salary", False),
        ("ceo", "dev.two", "performance", True),  # executive; also indirect line
        ("ceo", "dev.two", "salary", True),
        ("ceo", "dev.two", "personal_contact", False),
        ("hr", "dev.two", "salary", True),
        ("hr", "cora.ceo", "personal_contact", True),
        ("hr", "dev.two", "performance", False),
        ("dev", "dev.two", "performance", False),
        ("dev", "lena.lead", "performance", False),
    ],
)
def test_get_restricted__follows_the_role_and_line_rules(d, viewer, subject, field, allowed):
    actor = getattr(d, viewer)
    before = d.hash()
    if allowed:
        assert d.call("directory_get_restricted", actor=actor, username=subject, field=field)["value"] is not None
    else:
        with pytest.raises(AppError) as info:
            d.call("directory_get_restricted", actor=actor, username=subject, field=field)
        assert info.value.code == "forbidden" and "directory_request_access" in str(info.value)
    assert d.hash() == before


def test_access_request__approve_grants_for_seven_days_then_expires(d):
    made = d.call("directory_request_access", actor=d.dev, username="dev.two", field="salary", reason="Budget plan")
    assert made["owner"] == "olaf.out" and made["status"] == "pending"
    with pytest.raises(AppError) as dup:
        d.call("directory_request_access", actor=d.dev, username="dev.two", field="salary", reason="Again please")
    assert dup.value.code == "conflict"
    with pytest.raises(AppError) as not_owner:
        d.call("directory_decide_access_request", actor=d.lead, request_id=made["id"], approve=True)
    assert not_owner.value.code == "not_found"
    todo = d.call("directory_list_access_requests", actor=d.hr, role="to_me", status="pending")["requests"]
    assert [r["id"] for r in todo] == [made["id"]]
    done = d.call("directory_decide_access_request", actor=d.hr, request_id=made["id"], approve=True)
    assert done["status"] == "approved" and done["expires_at"] == (T0 + timedelta(days=7)).isoformat()
    assert d.call("directory_get_restricted", actor=d.dev, username="dev.two", field="salary")["value"]
    later = ToolContext(session=d.session, actor=d.dev, clock=FixedClock(T0 + timedelta(days=7, seconds=1)))
    with pytest.raises(AppError) as expired:
        call_tool(company_specs()["directory_get_restricted"], {"username": "dev.two", "field": "salary"}, later)
    assert expired.value.code == "forbidden"
    assert [r.table_name for r in d.log()][-2:] == ["access_requests", "access_requests"]


def test_access_request__deny_keeps_it_hidden_and_cannot_be_decided_twice(d):
    made = d.call(
        "directory_request_access", actor=d.dev, username="dev.two", field="performance", reason="Peer review"
    )
    assert made["owner"] == "lena.lead"
    d.call("directory_decide_access_request", actor=d.lead, request_id=made["id"], approve=False)
    with pytest.raises(AppError) as again:
        d.call("directory_decide_access_request", actor=d.lead, request_id=made["id"], approve=True)
    assert again.value.code == "conflict"
    with pytest.raises(AppError):
        d.call("directory_get_restricted", actor=d.dev, username="dev.two", field="performance")


def test_org_queries__chain_reports_team_and_chart(d):
    assert [p["username"] for p in d.call("directory_manager_chain", username="dev.one")["chain"]] == [
        "lena.lead",
        "cora.ceo",
    ]
    direct = d.call("directory_reports", username="cora.ceo")["reports"]
    assert [p["username"] for p in direct] == ["lena.lead", "olaf.out"]
    every = d.call("directory_reports", username="cora.ceo", all_levels=True)["reports"]
    assert {p["username"]: p["depth"] for p in every} == {"lena.lead": 1, "olaf.out": 1, "dev.one": 2, "dev.two": 2}
    assert [m["username"] for m in d.call("directory_team_members", team="platform")["members"]] == [
        "lena.lead",
        "dev.one",
        "dev.two",
    ]
    chart = d.call("directory_org_chart", department="engineering", depth=1)["people"]
    assert [(p["username"], p["depth"]) for p in chart] == [("cora.ceo", 0), ("lena.lead", 1), ("olaf.out", 1)]
    found = d.call("directory_search_people", text="dev")
    assert [p["username"] for p in found["people"]] == ["dev.one", "dev.two"]
    assert d.call("directory_search_people")["total"] == 5
    assert d.call("directory_search_people", include_inactive=True)["total"] == 6


@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        ("directory_get_profile", {"username": "nobody"}, "not_found"),
        ("directory_get_restricted", {"username": "dev.two", "field": "shoe_size"}, "invalid_argument"),
        ("directory_search_people", {"limit": 0}, "invalid_argument"),
        ("directory_org_chart", {"department": "Engineering", "depth": 9}, "invalid_argument"),
        ("directory_team_members", {"team": "Mars"}, "not_found"),
        ("directory_request_access", {"username": "dev.two", "field": "salary", "reason": "x"}, "invalid_argument"),
        ("directory_request_access", {"username": "dev.one", "field": "salary", "reason": "my own"}, "conflict"),
        ("directory_list_access_requests", {"role": "everyone"}, "invalid_argument"),
        ("directory_decide_access_request", {"request_id": 77, "approve": True}, "not_found"),
    ],
)
def test_bad_input__gives_a_stable_code_and_changes_nothing(d, tool, args, code):
    before = d.hash()
    with pytest.raises(AppError) as info:
        d.call(tool, actor=d.dev, **args)
    assert info.value.code == code
    assert d.hash() == before


def test_revoke_access__owner_manager_or_hr_ends_a_live_grant_and_nobody_else(d):
    made = d.call("directory_request_access", actor=d.dev, username="dev.two", field="salary", reason="Budget plan")
    d.call("directory_decide_access_request", actor=d.hr, request_id=made["id"], approve=True)
    mine = d.call("directory_list_access_requests", role="reports", status="approved")["requests"]
    assert [r["id"] for r in mine] == [made["id"]] and mine[0]["requester"] == "dev.one"
    with pytest.raises(AppError) as stranger:
        d.call("directory_revoke_access", actor=d.ceo, request_id=made["id"])
    assert stranger.value.code == "not_found"
    done = d.call("directory_revoke_access", request_id=made["id"])  # lena.lead, dev.one's manager
    assert done["status"] == "revoked" and done["expires_at"] == T0.isoformat()
    with pytest.raises(AppError) as gone:
        d.call("directory_get_restricted", actor=d.dev, username="dev.two", field="salary")
    assert gone.value.code == "forbidden"
    h = d.hash()
    with pytest.raises(AppError) as again:
        d.call("directory_revoke_access", actor=d.hr, request_id=made["id"])
    assert again.value.code == "conflict" and d.hash() == h
    revoked = d.call("directory_list_access_requests", actor=d.dev, role="mine", status="revoked")["requests"]
    assert [r["id"] for r in revoked] == [made["id"]]


def test_revoke_access__a_pending_or_expired_request_is_no_grant(d):
    made = d.call("directory_request_access", actor=d.dev, username="dev.two", field="salary", reason="Budget plan")
    with pytest.raises(AppError) as pending:
        d.call("directory_revoke_access", actor=d.hr, request_id=made["id"])
    assert pending.value.code == "conflict"
    d.call("directory_decide_access_request", actor=d.hr, request_id=made["id"], approve=True)
    later = ToolContext(session=d.session, actor=d.hr, clock=FixedClock(T0 + timedelta(days=8)))
    with pytest.raises(AppError) as expired:
        call_tool(company_specs()["directory_revoke_access"], {"request_id": made["id"]}, later)
    assert expired.value.code == "conflict" and "expired" in str(expired.value)

from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from mcp_tools.base import Actor, ToolContext, call_tool
from mcp_tools.company import company_specs
from worlds.changelog import track
from worlds.clock import FixedClock
from worlds.schema import ChangeLog, Employee, EmployeeRole, ProjectMember, Team
from worlds.spec import WorldSpec
from worlds.store import WorldStore


@pytest.fixture(scope="session")
def base_world(tmp_path_factory):
    world = WorldStore(tmp_path_factory.mktemp("apps")).base(WorldSpec(seed=21, employees=30, history_days=14))
    yield world
    world.close()


class App:
    """A forked world with a tracked session and helpers to call tools as someone."""

    def __init__(self, world):
        self.world = world
        self.session = world.session()
        self.clock = FixedClock(datetime(2026, 3, 2, 9, tzinfo=UTC))
        track(self.session, clock=self.clock, tag="test")
        lead_id = self.session.scalar(select(Team.lead_id).order_by(Team.id).limit(1))
        self.lead = Actor.load(self.session, lead_id)
        managers = select(EmployeeRole.employee_id).where(EmployeeRole.role.in_(["manager", "executive"]))
        members = select(ProjectMember.employee_id)
        self.outsider = Actor.load(
            self.session,
            self.session.scalar(
                select(Employee.id)
                .where(Employee.id.not_in(managers), Employee.id.not_in(members))
                .order_by(Employee.id)
            ),
        )

    def ctx(self, actor=None):
        return ToolContext(session=self.session, actor=actor or self.lead, clock=self.clock)

    def call(self, name, actor=None, **arguments):
        return call_tool(company_specs()[name], arguments, self.ctx(actor))

    def log_count(self):
        return self.session.scalar(select(func.count(ChangeLog.seq)))

    def hash(self):
        self.session.flush()
        return self.world.state_hash()


@pytest.fixture
def app(base_world):
    fork = base_world.fork()
    a = App(fork)
    yield a
    a.session.close()
    fork.close()

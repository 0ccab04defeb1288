"""The app contract: actors, the tool context, and tools whose typed signature and docstring are the schema.

A tool is a plain function in an app's ``server.py`` with flat primitive arguments (str, int, float, bool, a
list of one of those, each optionally None) and a Google docstring with one ``Args:`` line per argument.
``ToolSet(app).tool(READ | WRITE)`` turns it into a ``ToolSpec``: a namespaced name (``tickets_search``), its
kind, its description (the docstring summary), a flat JSON schema and a validator precomputed at import.
Trainers such as TRL and verl reject ``anyOf`` and nesting, so ``Optional[X]`` is ``{"type": ["x", "null"]}``.

A tool takes no context argument: it reads ``current_context()`` (session, actor, clock) from a context
variable, so one function serves the in-process episode (``call_tool``: no serialization, AppError propagates)
and MCP (``build_server``: one FastMCP server with every tool under its namespaced name; AppError becomes
``ToolError("<code>: <message>")`` and every other exception is masked).

Services never commit: the caller owns the transaction (an episode wraps each write in a savepoint), and the
change log records every ORM write. Expected failures raise ``mcp_tools.errors.AppError`` subclasses.
"""

from __future__ import annotations

import inspect
import math
import re
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mcp_tools.errors import AppError, InvalidArgument, NotFound, Unavailable
from worlds.clock import Clock
from worlds.schema import Employee, EmployeeRole

READ = "read"
WRITE = "write"
MAX_STRING = 20_000
"""Longest string argument: bigger inputs are abuse, and refusing them keeps traces and the database small."""
MAX_LIST = 200
_JSON = {str: "string", int: "integer", float: "number", bool: "boolean"}


@dataclass(frozen=True, kw_only=True)
class Actor:
    """The employee a call acts as, with the roles access control checks."""

    employee_id: int
    username: str
    roles: frozenset[str]

    def has_role(self, *roles: str) -> bool:
        """Whether the actor holds any of ``roles``."""
        return not self.roles.isdisjoint(roles)

    @classmethod
    def load(cls, session: Session, employee_id_or_username: int | str) -> Actor:
        """Load an active employee and their roles by id or username.

        Raises:
            NotFound: no active employee matches.
        """
        who = employee_id_or_username
        cond = Employee.id == who if isinstance(who, int) else Employee.username == who
        row = session.execute(select(Employee.id, Employee.username).where(cond, Employee.active.is_(True))).first()
        if row is None:
            raise NotFound(f"expected an active employee {who!r}; found none")
        roles = session.scalars(select(EmployeeRole.role).where(EmployeeRole.employee_id == row.id))
        return cls(employee_id=row.id, username=row.username, roles=frozenset(roles))


@dataclass(kw_only=True)
class ToolContext:
    """What a service call needs: the episode's session, who acts, and the simulated clock."""

    session: Session
    actor: Actor
    clock: Clock


_CURRENT: ContextVar[ToolContext | None] = ContextVar("companysim_tool_context", default=None)


@contextmanager
def use_context(ctx: ToolContext) -> Iterator[ToolContext]:
    """Make ``ctx`` the context of tool calls inside the block (per thread / asyncio task)."""
    token = _CURRENT.set(ctx)
    try:
        yield ctx
    finally:
        _CURRENT.reset(token)


def current_context() -> ToolContext:
    """The active tool context.

    Raises:
        Unavailable: no episode is active for this call.
    """
    ctx = _CURRENT.get()
    if ctx is None:
        raise Unavailable("expected an active episode for this tool call; found none")
    return ctx


Check = Callable[[Any], Any]


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """One tool: its namespaced name, app, kind, function, description, flat JSON schema and validator."""

    name: str
    app: str
    kind: str
    fn: Callable[..., Any]
    description: str
    parameters: dict[str, Any]
    checks: Mapping[str, Check] = field(repr=False)
    required: tuple[str, ...] = field(repr=False)
    defaults: Mapping[str, Any] = field(repr=False)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check ``arguments`` against the schema; return them with defaults filled in.

        Raises:
            InvalidArgument: naming the first argument that is unknown, missing or of the wrong type.
        """
        if type(arguments) is not dict:
            raise InvalidArgument(f"{self.name}: expected arguments as an object; got {type(arguments).__name__}")
        out = dict(self.defaults)
        checks = self.checks
        for key, value in arguments.items():
            check = checks.get(key)
            if check is None:
                known = ", ".join(checks) or "none"
                raise InvalidArgument(f"{self.name}: unknown argument {str(key)[:40]!r}; expected one of: {known}")
            out[key] = check(value)
        for key in self.required:
            if key not in arguments:
                raise InvalidArgument(f"{self.name}: missing required argument {key!r}")
        return out


def _checker(tool: str, name: str, kind: type, is_list: bool, nullable: bool) -> Check:
    """A closure per argument: a call costs one ``type()`` test and a comparison or two, no schema walk."""
    accept = (int, float) if kind is float else (kind,)  # exact types: bool is not an int, int is a float
    want = f"{'a list of ' if is_list else ''}{_JSON[kind]}{' or null' if nullable else ''}"

    def one(v: Any) -> Any:
        if type(v) not in accept:
            raise InvalidArgument(f"{tool}: argument {name!r} must be {want}; got {type(v).__name__}")
        if kind is str and (len(v) > MAX_STRING or "\x00" in v):
            raise InvalidArgument(f"{tool}: argument {name!r} must be <= {MAX_STRING} chars without NUL")
        if kind is int and not -(2**53) <= v <= 2**53:
            raise InvalidArgument(f"{tool}: argument {name!r} must be within +-2**53; got {v}")
        if kind is float and not math.isfinite(v):
            raise InvalidArgument(f"{tool}: argument {name!r} must be finite; got {v}")
        return float(v) if kind is float else v

    def check(v: Any) -> Any:
        if v is None and nullable:
            return None
        if not is_list:
            return one(v)
        if type(v) is not list or len(v) > MAX_LIST:
            raise InvalidArgument(f"{tool}: argument {name!r} must be {want} (<= {MAX_LIST} items)")
        return [one(x) for x in v]

    return check


def _parse_doc(doc: str) -> tuple[str, dict[str, str]]:
    """The summary paragraph and the ``Args:`` entries of a Google docstring."""
    summary = " ".join(doc.strip().split("\n\n")[0].split())
    args: dict[str, str] = {}
    block = re.search(r"^Args:\n(.*?)(?=^\S|\Z)", doc, re.M | re.S)
    current = ""
    for line in block.group(1).splitlines() if block else []:
        m = re.match(r"^\s{2,8}(\w+)(?: \([^)]*\))?:\s*(.*)$", line)
        if m:
            current = m.group(1)
            args[current] = m.group(2).strip()
        elif current and line.strip():
            args[current] += " " + line.strip()
    return summary, args


def _unwrap(hint: Any) -> tuple[Any, bool, bool]:
    """(item type, is a list, accepts None) of a flat annotation."""
    nullable = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(inner) < len(typing.get_args(hint))
        hint = inner[0] if len(inner) == 1 else hint
    if typing.get_origin(hint) is list:
        return typing.get_args(hint)[0], True, nullable
    return hint, False, nullable


class ToolSet:
    """The tools of one app; names get the app prefix (``tickets`` + ``search`` -> ``tickets_search``).

    Args:
        app: The app name, also the namespace of its tools on the company server.
    """

    def __init__(self, app: str) -> None:
        self.app = app
        self._specs: dict[str, ToolSpec] = {}

    @property
    def specs(self) -> list[ToolSpec]:
        """The tools, ordered by name."""
        return [self._specs[k] for k in sorted(self._specs)]

    def get(self, name: str) -> ToolSpec | None:
        """The tool called ``name`` (namespaced), or None."""
        return self._specs.get(name)

    def tool(self, kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a function as a READ or WRITE tool; fails at import if its schema is not flat and documented."""
        if kind not in (READ, WRITE):
            raise ValueError(f"tool kind must be {READ!r} or {WRITE!r}; got {kind!r}")

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            spec = _make_spec(self.app, kind, fn)
            if spec.name in self._specs:
                raise ValueError(f"duplicate tool name {spec.name!r}")
            self._specs[spec.name] = spec
            return fn

        return register


def _make_spec(app: str, kind: str, fn: Callable[..., Any]) -> ToolSpec:
    name = f"{app}_{fn.__name__}"
    summary, docs = _parse_doc(inspect.getdoc(fn) or "")
    hints = typing.get_type_hints(fn)
    params = inspect.signature(fn).parameters
    if not summary:
        raise TypeError(f"{name}: the docstring summary is the tool description and must not be empty")
    if stale := sorted(set(docs) - set(params)):
        raise TypeError(f"{name}: Args: documents {stale} which the signature does not have")
    props: dict[str, Any] = {}
    checks: dict[str, Check] = {}
    defaults: dict[str, Any] = {}
    for pname, param in params.items():
        base, is_list, nullable = _unwrap(hints.get(pname))
        if base not in _JSON:
            raise TypeError(f"{name}: argument {pname} has non-primitive type {hints.get(pname)!r}")
        if pname not in docs:
            raise TypeError(f"{name}: argument {pname} has no Args: line in the docstring")
        json_type = "array" if is_list else _JSON[base]
        prop: dict[str, Any] = {"type": [json_type, "null"] if nullable else json_type, "description": docs[pname]}
        if is_list:
            prop["items"] = {"type": _JSON[base]}
        if param.default is not inspect.Parameter.empty:
            if isinstance(param.default, list | dict | set):
                raise TypeError(f"{name}: argument {pname} has a mutable default; use None")
            defaults[pname] = param.default
            if param.default is not None:
                prop["default"] = param.default
        props[pname] = prop
        checks[pname] = _checker(name, pname, base, is_list, nullable)
    required = tuple(p for p in params if p not in defaults)
    schema = {"type": "object", "properties": props, "required": list(required), "additionalProperties": False}
    return ToolSpec(
        name=name,
        app=app,
        kind=kind,
        fn=fn,
        description=summary,
        parameters=schema,
        checks=checks,
        required=required,
        defaults=defaults,
    )


def call_tool(spec: ToolSpec, arguments: dict[str, Any], ctx: ToolContext) -> Any:
    """Validate and run one tool in-process as ``ctx.actor``; returns its JSON-able result.

    AppError propagates (the episode turns it into an error record); other exceptions are not masked here:
    in-process the caller decides, over MCP ``mask_error_details`` does.
    """
    kwargs = spec.validate(arguments)
    with use_context(ctx):
        return spec.fn(**kwargs)


def openai_tools(specs: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """OpenAI function-calling schemas: ``{"type": "function", "function": {name, description, parameters}}``."""
    return [
        {"type": "function", "function": {"name": s.name, "description": s.description, "parameters": s.parameters}}
        for s in specs
    ]


def build_server(
    name: str, specs: Iterable[ToolSpec], context_provider: Callable[[], ToolContext] = current_context
) -> Any:
    """A FastMCP server exposing ``specs`` under their namespaced names (``tickets_get``).

    Each tool keeps its spec's exact schema (FastMCP would otherwise derive one from the signature, with
    ``anyOf``), is tagged ``{"read"}`` or ``{"write"}`` (and annotated ``read_only_hint``), resolves its context
    per call through ``context_provider``, maps AppError to ``ToolError("<code>: <message>")`` and lets
    ``mask_error_details`` hide every other exception. Returns ``fastmcp.FastMCP`` (typed Any so importing this
    module does not import fastmcp).
    """
    from fastmcp import FastMCP
    from fastmcp.exceptions import ToolError
    from fastmcp.tools.base import Tool, ToolResult
    from mcp.types import ToolAnnotations
    from pydantic import PrivateAttr

    class SpecTool(Tool):
        _spec: ToolSpec | None = PrivateAttr(default=None)

        async def run(self, arguments: dict[str, Any]) -> ToolResult:
            """Run the spec synchronously (SQLite work is short); AppError -> ToolError with its code."""
            assert self._spec is not None
            try:
                result = call_tool(self._spec, arguments, context_provider())
            except AppError as exc:
                raise ToolError(f"{exc.code}: {exc.message}") from None
            return ToolResult(structured_content=result if isinstance(result, dict) else {"result": result})

    server: Any = FastMCP(name, mask_error_details=True)
    for spec in specs:
        hints = ToolAnnotations(read_only_hint=spec.kind == READ, open_world_hint=False)
        tool = SpecTool(
            name=spec.name,
            description=spec.description,
            parameters=spec.parameters,
            tags={spec.kind},
            annotations=hints,
        )
        tool._spec = spec
        server.add_tool(tool)
    return server

"""The app contract: actors, the tool context, and tools whose typed signature and docstring are the schema.

A tool is a plain function in an app's ``server.py`` with flat primitive arguments (str, int, float, bool, a
list of one of those, each optionally None) and a Google docstring with one ``Args:`` line per argument. The
``ToolSet.tool(kind)`` decorator turns it into a ``ToolSpec``: a namespaced name (``tickets_search``), its kind
(READ or WRITE), a flat JSON schema (trainers such as TRL and verl reject ``anyOf`` and nesting, so
``Optional[X]`` becomes ``{"type": ["x", "null"]}``) and a precomputed validator. The function reads its
``ToolContext`` (session, actor, clock) from a context variable, so the same function serves the in-process
episode (``call_tool``, no serialization) and an MCP server (``build_server``).

Services never commit: the caller owns the transaction (the episode wraps each write in a savepoint), and
every ORM write is recorded by the change log. Expected failures raise ``AppError`` subclasses; an MCP server
turns them into ``ToolError("<code>: <message>")`` and masks every other exception.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Iterator
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
MAX_LIST = 200
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


@dataclass(frozen=True, kw_only=True)
class Actor:
    """The employee a call acts as, with the roles access control checks."""

    employee_id: int
    username: str
    roles: frozenset[str]

    def has_role(self, *roles: str) -> bool:
        """Whether the actor holds any of ``roles``."""
        return any(r in self.roles for r in roles)

    @classmethod
    def load(cls, session: Session, who: int | str) -> Actor:
        """Load an active employee by id or username.

        Raises:
            NotFound: no active employee matches.
        """
        cond = Employee.id == who if isinstance(who, int) else Employee.username == who
        emp = session.execute(select(Employee.id, Employee.username).where(cond, Employee.active.is_(True))).first()
        if emp is None:
            raise NotFound(f"no active employee {who!r}")
        roles = session.scalars(
            select(EmployeeRole.role).where(EmployeeRole.employee_id == emp.id).order_by(EmployeeRole.role)
        )
        return cls(employee_id=emp.id, username=emp.username, roles=frozenset(roles))


@dataclass(kw_only=True)
class ToolContext:
    """What a service call needs: the episode's session, who acts, and the simulated clock."""

    session: Session
    actor: Actor
    clock: Clock


_CURRENT: ContextVar[ToolContext | None] = ContextVar("companysim_tool_context", default=None)


@contextmanager
def use_context(ctx: ToolContext) -> Iterator[ToolContext]:
    """Make ``ctx`` the context of tool calls inside the block."""
    token = _CURRENT.set(ctx)
    try:
        yield ctx
    finally:
        _CURRENT.reset(token)


def current_context() -> ToolContext:
    """The active tool context.

    Raises:
        Unavailable: no episode is active.
    """
    ctx = _CURRENT.get()
    if ctx is None:
        raise Unavailable("no episode is active for this call")
    return ctx


@dataclass(frozen=True, kw_only=True)
class _Param:
    name: str
    kind: type
    is_list: bool
    nullable: bool
    required: bool
    default: Any


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """One tool: name, app, kind, the wrapped function, its description and flat JSON schema."""

    name: str
    app: str
    kind: str
    fn: Callable[..., Any]
    description: str
    parameters: dict[str, Any]
    params: tuple[_Param, ...] = field(repr=False)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check ``arguments`` against the schema and fill defaults.

        Raises:
            InvalidArgument: naming the first argument that is unknown, missing or of the wrong type.
        """
        if not isinstance(arguments, dict):
            raise InvalidArgument(f"{self.name}: arguments must be an object")
        known = {p.name for p in self.params}
        for key in arguments:
            if key not in known:
                raise InvalidArgument(
                    f"{self.name}: unknown argument {key!r}; expected {', '.join(sorted(known)) or 'none'}"
                )
        out: dict[str, Any] = {}
        for p in self.params:
            if p.name not in arguments:
                if p.required:
                    raise InvalidArgument(f"{self.name}: missing required argument {p.name!r}")
                out[p.name] = p.default
                continue
            value = arguments[p.name]
            if value is None:
                if not p.nullable:
                    raise InvalidArgument(f"{self.name}: argument {p.name!r} must not be null")
                out[p.name] = None
                continue
            if p.is_list:
                if not isinstance(value, list) or len(value) > MAX_LIST:
                    raise InvalidArgument(
                        f"{self.name}: argument {p.name!r} must be a list of at most {MAX_LIST} items"
                    )
                out[p.name] = [_check(self.name, p, v) for v in value]
            else:
                out[p.name] = _check(self.name, p, value)
        return out


def _check(tool: str, p: _Param, value: Any) -> Any:
    want = _JSON_TYPES[p.kind]
    ok = (
        (p.kind is bool and isinstance(value, bool))
        or (p.kind is int and isinstance(value, int) and not isinstance(value, bool))
        or (p.kind is float and isinstance(value, int | float) and not isinstance(value, bool))
        or (p.kind is str and isinstance(value, str))
    )
    if not ok:
        raise InvalidArgument(f"{tool}: argument {p.name!r} must be {want}, got {type(value).__name__}")
    if p.kind is str and (len(value) > MAX_STRING or "\x00" in value):
        raise InvalidArgument(f"{tool}: argument {p.name!r} is longer than {MAX_STRING} characters or has NUL")
    if p.kind is int and abs(value) > 2**62:
        raise InvalidArgument(f"{tool}: argument {p.name!r} is out of range")
    return float(value) if p.kind is float else value


def _doc_args(doc: str) -> tuple[str, dict[str, str]]:
    summary = doc.strip().split("\n\n")[0].replace("\n", " ").strip()
    args: dict[str, str] = {}
    match = re.search(r"^\s*Args:\s*$(.*?)(?=^\s*(Returns|Raises|Yields|Examples?):|\Z)", doc, re.M | re.S)
    if match:
        current = None
        for line in match.group(1).splitlines():
            m = re.match(r"^\s{4,8}(\w+)(?: \([^)]*\))?:\s*(.*)$", line)
            if m:
                current = m.group(1)
                args[current] = m.group(2).strip()
            elif current and line.strip():
                args[current] += " " + line.strip()
    return summary, args


def _unwrap(hint: Any) -> tuple[type, bool, bool]:
    nullable = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(inner) != len(typing.get_args(hint))
        hint = inner[0] if len(inner) == 1 else hint
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint)
        return item, True, nullable
    return hint, False, nullable


class ToolSet:
    """The tools of one app; names get the app prefix (``chat`` + ``post`` -> ``chat_post``).

    Args:
        app: The app name, also the namespace of its tools.
    """

    def __init__(self, app: str) -> None:
        self.app = app
        self._specs: dict[str, ToolSpec] = {}

    @property
    def specs(self) -> list[ToolSpec]:
        """The tools, ordered by name."""
        return [self._specs[k] for k in sorted(self._specs)]

    def tool(self, kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a function as a READ or WRITE tool; fails at import if its schema is not flat and documented."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            name = f"{self.app}_{fn.__name__}"
            summary, docs = _doc_args(inspect.getdoc(fn) or "")
            hints = typing.get_type_hints(fn)
            params: list[_Param] = []
            props: dict[str, Any] = {}
            required: list[str] = []
            for pname, param in inspect.signature(fn).parameters.items():
                base, is_list, nullable = _unwrap(hints[pname])
                if base not in _JSON_TYPES:
                    raise TypeError(f"{name}: argument {pname} has non-primitive type {hints[pname]!r}")
                if pname not in docs:
                    raise TypeError(f"{name}: argument {pname} has no Args: line in the docstring")
                json_type: Any = [_JSON_TYPES[base], "null"] if nullable and not is_list else _JSON_TYPES[base]
                prop: dict[str, Any] = {"description": docs[pname]}
                if is_list:
                    prop.update(
                        {
                            "type": ["array", "null"] if nullable else "array",
                            "items": {"type": _JSON_TYPES[base]},
                        }
                    )
                else:
                    prop["type"] = json_type
                has_default = param.default is not inspect.Parameter.empty
                if has_default and param.default is not None:
                    prop["default"] = param.default
                props[pname] = prop
                if not has_default:
                    required.append(pname)
                params.append(
                    _Param(
                        name=pname,
                        kind=base,
                        is_list=is_list,
                        nullable=nullable,
                        required=not has_default,
                        default=None if not has_default else param.default,
                    )
                )
            schema = {
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": False,
            }
            self._specs[name] = ToolSpec(
                name=name,
                app=self.app,
                kind=kind,
                fn=fn,
                description=summary,
                parameters=schema,
                params=tuple(params),
            )
            return fn

        return register


def call_tool(spec: ToolSpec, arguments: dict[str, Any], ctx: ToolContext) -> Any:
    """Validate and run one tool in-process as ``ctx.actor``; AppError propagates to the caller."""
    kwargs = spec.validate(arguments)
    with use_context(ctx):
        return spec.fn(**kwargs)


def openai_tools(specs: list[ToolSpec]) -> list[dict[str, Any]]:
    """The OpenAI function-calling schemas of ``specs``."""
    return [
        {
            "type": "function",
            "function": {"name": s.name, "description": s.description, "parameters": s.parameters},
        }
        for s in specs
    ]


def build_server(
    name: str, specs: list[ToolSpec], context_provider: Callable[[], ToolContext] = current_context
) -> Any:
    """A FastMCP server exposing ``specs``; AppError -> ToolError("<code>: <message>"), all else masked."""
    from fastmcp import FastMCP
    from fastmcp.exceptions import ToolError
    from fastmcp.tools.base import Tool, ToolResult

    class SpecTool(Tool):
        async def run(self, arguments: dict[str, Any]) -> ToolResult:
            spec: ToolSpec = self._spec  # type: ignore[attr-defined]
            try:
                result = call_tool(spec, arguments, context_provider())
            except AppError as exc:
                raise ToolError(f"{exc.code}: {exc}") from None
            return ToolResult(structured_content=result if isinstance(result, dict) else {"result": result})

    server = FastMCP(name, mask_error_details=True)
    for spec in specs:
        tool = SpecTool(name=spec.name, description=spec.description, parameters=spec.parameters, tags={spec.kind})
        object.__setattr__(tool, "_spec", spec)
        server.add_tool(tool)
    return server

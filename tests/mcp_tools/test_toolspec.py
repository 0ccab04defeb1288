"""The tool contract: schemas from signatures and docstrings, the fast validator, the in-process call path."""

import timeit

import pytest

from mcp_tools.base import (
    MAX_STRING,
    READ,
    WRITE,
    Actor,
    ToolSet,
    call_tool,
    current_context,
    openai_tools,
    use_context,
)
from mcp_tools.errors import AppError, InvalidArgument, NotFound, Unavailable

demo = ToolSet("demo")


@demo.tool(WRITE)
def echo(
    name: str,
    count: int = 1,
    ratio: float | None = None,
    loud: bool = False,
    tags: list[str] | None = None,
) -> dict:
    """Echo the arguments back.

    A second paragraph that is not part of the description.

    Args:
        name: Who to greet.
        count: How often,
            continued on a second line.
        ratio: A number or null.
        loud: Shout.
        tags: Some labels.
    """
    ctx = current_context()
    return {"name": name, "count": count, "ratio": ratio, "loud": loud, "tags": tags, "by": ctx.actor.username}


@demo.tool(READ)
def boom() -> dict:
    """Fail unexpectedly."""
    raise RuntimeError("internal detail /etc/secret")


def test_toolset__schema_is_flat_documented_and_nullable_as_type_lists():
    spec = demo.get("demo_echo")
    assert [s.name for s in demo.specs] == ["demo_boom", "demo_echo"]
    assert (spec.app, spec.kind, spec.description) == ("demo", "write", "Echo the arguments back.")
    assert spec.parameters == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Who to greet."},
            "count": {"type": "integer", "description": "How often, continued on a second line.", "default": 1},
            "ratio": {"type": ["number", "null"], "description": "A number or null."},
            "loud": {"type": "boolean", "description": "Shout.", "default": False},
            "tags": {"type": ["array", "null"], "description": "Some labels.", "items": {"type": "string"}},
        },
        "required": ["name"],
        "additionalProperties": False,
    }


def _define(ts, fn_src):
    scope = {}
    exec(fn_src, scope)  # noqa: S102 - building odd signatures for the registration checks
    return ts.tool(READ)(scope["f"])


@pytest.mark.parametrize(
    ("src", "match"),
    [
        ('def f(a: int) -> dict:\n    """Nothing documented."""\n', "no Args: line"),
        ('def f(a: dict) -> dict:\n    """Nested.\n\n    Args:\n        a: A dict.\n    """\n', "non-primitive"),
        ('def f(a: int | str) -> dict:\n    """Union.\n\n    Args:\n        a: Either.\n    """\n', "non-primitive"),
        ('def f() -> dict:\n    """Stale.\n\n    Args:\n        gone: Old.\n    """\n', "does not have"),
        ('def f(a: list[int] = []) -> dict:\n    """M.\n\n    Args:\n        a: L.\n    """\n', "mutable default"),
        ("def f() -> dict:\n    pass\n", "summary"),
    ],
)
def test_toolset__refuses_schemas_trainers_cannot_use(src, match):
    with pytest.raises(TypeError, match=match):
        _define(ToolSet("x"), src)


def test_toolset__refuses_duplicates_and_unknown_kinds():
    ts = ToolSet("x")
    _define(ts, 'def f() -> dict:\n    """F."""\n')
    with pytest.raises(ValueError, match="duplicate"):
        _define(ts, 'def f() -> dict:\n    """F."""\n')
    with pytest.raises(ValueError, match="kind"):
        ts.tool("delete")


@pytest.mark.parametrize(
    ("args", "culprit"),
    [
        ({}, "'name'"),
        ({"name": 1}, "'name'"),
        ({"name": None}, "'name'"),
        ({"name": "a" * (MAX_STRING + 1)}, "'name'"),
        ({"name": "a\x00b"}, "'name'"),
        ({"name": "a", "extra": 1}, "'extra'"),
        ({"name": "a", "count": True}, "'count'"),
        ({"name": "a", "count": 1.0}, "'count'"),
        ({"name": "a", "count": "1"}, "'count'"),
        ({"name": "a", "count": 2**60}, "'count'"),
        ({"name": "a", "ratio": "0.5"}, "'ratio'"),
        ({"name": "a", "ratio": float("nan")}, "'ratio'"),
        ({"name": "a", "loud": 1}, "'loud'"),
        ({"name": "a", "tags": "x"}, "'tags'"),
        ({"name": "a", "tags": ["x", 2]}, "'tags'"),
        ({"name": "a", "tags": ["x"] * 201}, "'tags'"),
    ],
)
def test_validator__rejects_bad_arguments_naming_them(args, culprit):
    with pytest.raises(InvalidArgument, match=culprit) as info:
        demo.get("demo_echo").validate(args)
    assert info.value.code == "invalid_argument" and "demo_echo" in str(info.value)


def test_validator__rejects_non_objects():
    with pytest.raises(InvalidArgument):
        demo.get("demo_echo").validate(["name"])


def test_validator__fills_defaults_and_widens_ints_to_floats():
    out = demo.get("demo_echo").validate({"name": "a", "ratio": 2, "tags": None})
    assert out == {"name": "a", "count": 1, "ratio": 2.0, "loud": False, "tags": None}
    assert type(out["ratio"]) is float


def test_validator__is_fast():
    spec = demo.get("demo_echo")
    args = {"name": "someone", "count": 3, "ratio": 0.5, "loud": True, "tags": ["a", "b"]}
    per_call = min(timeit.repeat(lambda: spec.validate(args), number=2_000, repeat=5)) / 2_000
    assert per_call < 10e-6, f"{per_call * 1e6:.1f} us per validation"


def test_call_tool__sets_the_context_for_the_call_only(app):
    out = call_tool(demo.get("demo_echo"), {"name": "x"}, app.ctx())
    assert out["by"] == "lena.lead" and out["count"] == 1
    assert call_tool(demo.get("demo_echo"), {"name": "x"}, app.ctx(app.outsider))["by"] == "olaf.out"
    with pytest.raises(Unavailable):
        current_context()  # the context does not leak out of the call


def test_call_tool__validates_first_and_does_not_mask_unexpected_errors(app):
    with pytest.raises(InvalidArgument, match="unknown argument 'nope'"):
        call_tool(demo.get("demo_echo"), {"name": "x", "nope": 1}, app.ctx())
    with pytest.raises(RuntimeError, match="internal detail"):  # not masked in-process: the episode decides
        call_tool(demo.get("demo_boom"), {}, app.ctx())
    with pytest.raises(Unavailable):
        current_context()  # restored even when the tool raised


def test_use_context__nests_and_restores(app):
    with pytest.raises(Unavailable) as info:
        current_context()
    assert info.value.code == "unavailable"
    with use_context(app.ctx()) as outer:
        with use_context(app.ctx(app.outsider)):
            assert current_context().actor.username == "olaf.out"
        assert current_context() is outer


def test_actor__loads_roles_by_id_or_username_and_refuses_inactive(app):
    lead = Actor.load(app.session, 2)
    assert lead == Actor.load(app.session, "lena.lead")
    assert lead.roles == frozenset({"employee", "manager"}) and lead.has_role("executive", "manager")
    assert not app.outsider.has_role("manager")
    for who in ("gone.away", 999):
        with pytest.raises(NotFound):
            Actor.load(app.session, who)


def test_openai_tools__function_schemas():
    (tool,) = openai_tools([demo.get("demo_boom")])
    assert tool == {
        "type": "function",
        "function": {
            "name": "demo_boom",
            "description": "Fail unexpectedly.",
            "parameters": {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
        },
    }


def test_errors__share_one_root_with_stable_codes():
    from mcp_tools import errors

    codes = {
        cls.__name__: cls.code
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, AppError) and cls is not AppError
    }
    assert codes == {
        "InvalidArgument": "invalid_argument",
        "NotFound": "not_found",
        "Forbidden": "forbidden",
        "Conflict": "conflict",
        "IllegalTransition": "illegal_transition",
        "UnknownTool": "unknown_tool",
        "Unavailable": "unavailable",
        "SandboxUnavailable": "unavailable",
        "UnknownSandbox": "invalid_argument",
        "InvalidRef": "invalid_ref",
        "InvalidPath": "invalid_path",
        "BinaryFile": "binary_file",
        "TooLarge": "too_large",
        "MergeConflict": "merge_conflict",
        "GitFailed": "git_error",
        "InvalidCell": "invalid_cell",
        "InvalidFormula": "invalid_formula",
        "UnsupportedFormat": "unsupported_format",
        "CorruptFile": "corrupt_file",
    }
    assert issubclass(errors.IllegalTransition, errors.Conflict)
    assert str(errors.NotFound("expected x; found y")) == "expected x; found y"

"""TRL ``environment_factory``: a class per scenario with one typed, documented method per tool.

TRL's ``GRPOTrainer(environment_factory=...)`` calls the factory with no arguments, lists the public functions
of the *class* (every one except ``reset`` and ``get_reward`` becomes a tool, named by ``__name__``), renders
each with ``transformers.utils.get_json_schema`` (which needs a type hint per parameter and a Google ``Args:``
line per parameter, or it raises), calls ``reset(**row)`` before each rollout and appends the returned text to
the prompt, calls the tools with the model's keyword arguments, and reads ``get_reward()`` at the end.

So the methods are generated from our flat tool schemas: real annotations (``str``, ``int | None``,
``list[str] | None``), a ``__signature__`` with the schema's required set and defaults, and a docstring with the
tool description and an ``Args:`` section. Each method only forwards the keyword arguments the model gave to
``Episode.step`` (which fills defaults and validates), and returns the result as JSON text or the error line
``error [code]: message``; it never raises, so a bad call is something the model sees and can learn from.

The class has no other public function on purpose: anything public would be offered to the model as a tool.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from sim.adapters.common import EpisodeRunner, TaskRow, error_line, scenario_apps, scenario_tools
from worlds.store import WorldStore

_SCALARS: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}
RETURNS = "The tool's result as JSON text, or 'error [code]: message' when the call is refused."


class CompanySimEnv:
    """Base of the generated classes: ``reset(**row)``, ``get_reward()`` and the call every tool method makes.

    Use ``trl_environment(scenario)`` to get a class for a scenario; instances take no arguments, as TRL's
    factory contract requires.
    """

    scenario: ClassVar[str] = ""
    store: ClassVar[WorldStore | str | Path | None] = None
    apps: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self._runner: EpisodeRunner | None = None

    def reset(self, **row: Any) -> str:
        """Start the task a dataset row names (``seed``, ``difficulty``, ``options``, ``scenario``).

        Other keys of the row (the prompt, ...) are ignored. Returns the task prompt, which TRL appends to the
        row's last user message.

        Raises:
            BadOption: the row does not name a task of this scenario (a dataset bug; see ``TaskRow.parse``).
        """
        task = TaskRow.parse(row, self.scenario)
        return self._episode().reset(task)

    def get_reward(self) -> float:
        """The episode's score (final after ``submit`` or the turn limit; the current state's before)."""
        return self._runner.reward() if self._runner is not None else 0.0

    def _episode(self) -> EpisodeRunner:
        if self._runner is None:
            self._runner = EpisodeRunner(self.scenario, self.store, self.apps)
        return self._runner

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self._runner is None:
            return error_line("not_reset", "call reset() before using a tool")
        return self._runner.call(name, arguments).text

    def _close(self) -> None:
        """Free the episode's world (private: a public method would become a tool)."""
        if self._runner is not None:
            self._runner.close()


def _hint(prop: dict[str, Any]) -> Any:
    """The Python annotation of one flat schema property (``{"type": ["string", "null"]}`` -> ``str | None``)."""
    kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    nullable = "null" in kinds
    (kind,) = [k for k in kinds if k != "null"]
    hint: Any = _SCALARS[kind] if kind != "array" else list[_SCALARS[prop.get("items", {}).get("type", "")]]  # type: ignore[misc]
    return hint | None if nullable else hint


def _one_line(text: str) -> str:
    return " ".join(text.split())


def tool_method(tool: dict[str, Any]) -> Callable[..., str]:
    """A method for one OpenAI tool schema, shaped so ``get_json_schema`` gives that schema back.

    Raises:
        KeyError: the schema uses a type a flat companysim schema never has (objects, nesting).
    """
    function = tool["function"]
    name: str = function["name"]
    params = function["parameters"]
    required = set(params.get("required", []))
    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    doc_args = []
    for pname, prop in params["properties"].items():
        annotations[pname] = _hint(prop)
        default = inspect.Parameter.empty if pname in required else prop.get("default")
        signature.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=default))
        doc_args.append(f"    {pname}: {_one_line(prop.get('description', ''))}")
    annotations["return"] = str
    args_block = "\n\nArgs:\n" + "\n".join(doc_args) if doc_args else ""

    def method(self: CompanySimEnv, *args: Any, **arguments: Any) -> str:
        if args:
            return error_line("invalid_argument", f"{name}: pass arguments by name; got {len(args)} positional")
        return self._call(name, arguments)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"{_one_line(function['description'])}{args_block}\n\nReturns:\n    {RETURNS}\n"
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [p.replace(annotation=annotations.get(p.name, inspect.Parameter.empty)) for p in signature],
        return_annotation=str,
    )
    return method


def trl_environment(
    scenario: str, *, store: WorldStore | str | Path | None = None, name: str | None = None
) -> type[CompanySimEnv]:
    """The ``environment_factory`` class for ``scenario``: ``GRPOTrainer(environment_factory=cls)``.

    For a dataset that mixes scenarios pass ``{scenario: trl_environment(scenario) ...}`` and give each row an
    ``environment`` field, as TRL's multi-environment mode expects.

    Args:
        scenario: A registered scenario id; its tools become the class's methods.
        store: Where base worlds are cached (a store, a data directory, or None for the default).
        name: The class name (default: derived from the scenario id).
    """
    tools = scenario_tools(scenario, store)
    namespace: dict[str, Any] = {t["function"]["name"]: tool_method(t) for t in tools}
    namespace.update(scenario=scenario, store=store, apps=scenario_apps(scenario, store))
    namespace["__doc__"] = f"The {scenario} company task for TRL: one method per tool, reset(**row), get_reward()."
    cls_name = name or "CompanySim_" + re.sub(r"\W", "_", scenario)
    return type(cls_name, (CompanySimEnv,), namespace)

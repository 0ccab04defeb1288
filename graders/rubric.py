"""Loading and dumping rubrics as data (YAML or JSON).

``load_rubric`` accepts a path, YAML/JSON text, or an already-parsed dict, and always returns a fully
validated ``Rubric``: every check's function is registered and its params fit the function's signature, so
an invalid rubric fails here with a ``RubricError`` naming the check id and field, not during an episode.
``dump_rubric`` writes canonical YAML or JSON (sorted keys) so a rubric file round-trips byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from graders.base import Rubric
from graders.errors import RubricError


def load_rubric(source: str | Path | Mapping[str, Any]) -> Rubric:
    """Parse and validate a rubric from a file path, YAML/JSON text, or a dict.

    A ``str`` is taken as a path when it names an existing file ending in .yaml, .yml or .json, otherwise as
    text (JSON is valid YAML, so one parser reads both).

    Raises:
        RubricError: unreadable text, unknown check function (``UnknownCheck``), bad params, duplicate check
            id or non-positive weight; the message names the check id and the field.
    """
    if isinstance(source, Path) or (isinstance(source, str) and _is_path(source)):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise RubricError(f"cannot read rubric file {str(path)!r}: {exc.strerror}") from None
        return _from_data(_parse(text, origin=str(path)))
    if isinstance(source, str):
        return _from_data(_parse(source, origin="<text>"))
    return _from_data(source)


def dump_rubric(rubric: Rubric, fmt: Literal["yaml", "json"] = "yaml") -> str:
    """The rubric as canonical YAML or JSON text (sorted keys, UTF-8, trailing newline)."""
    data = rubric.model_dump(mode="json")
    if fmt == "json":
        return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    import yaml  # lazy: episodes build rubrics from data and never need YAML (keeps cold start down)

    return yaml.safe_dump(data, sort_keys=True, allow_unicode=True, default_flow_style=False)


def _is_path(source: str) -> bool:
    return "\n" not in source and source.endswith((".yaml", ".yml", ".json")) and Path(source).is_file()


def _parse(text: str, *, origin: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RubricError(f"{origin}: not valid YAML/JSON: {' '.join(str(exc).split())}") from None


def _from_data(data: Any) -> Rubric:
    if not isinstance(data, Mapping):
        raise RubricError(
            f"a rubric must be a mapping with id, version, description and checks; got {type(data).__name__}"
        )
    try:
        return Rubric.model_validate(dict(data))
    except ValidationError as exc:
        raise RubricError(_explain(exc, data)) from None


def _explain(exc: ValidationError, data: Mapping[str, Any]) -> str:
    """Turn pydantic's locations (checks.3.weight) into 'check <id>: field weight ...'."""
    checks = data.get("checks")
    parts = []
    for err in exc.errors():
        loc = list(err["loc"])
        where = f"rubric {data.get('id', '?')!r}"
        if len(loc) >= 2 and loc[0] == "checks" and isinstance(loc[1], int):
            raw = checks[loc[1]] if isinstance(checks, list) and loc[1] < len(checks) else None
            check_id = raw.get("id") if isinstance(raw, Mapping) else None
            where = f"check {check_id!r}" if check_id is not None else f"checks[{loc[1]}]"
            loc = loc[2:]
        field = ".".join(str(x) for x in loc) or "(whole)"
        got = "" if err["type"] == "missing" else f" (got {err['input']!r})"
        parts.append(f"{where}: field {field!r}: {err['msg']}{got}")
    return "; ".join(parts)

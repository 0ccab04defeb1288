"""Formulas: one tokenizer and parser for Excel syntax, OpenFormula translation, and a pure-Python evaluator.

Why our own evaluator rather than pycel or formulas: it works on the shared ``Workbook`` model, so ODS and XLSX
recalculate the same way without a conversion; it is fast (microseconds per cell, no workbook load) and
deterministic, so the generator can compute cached values and graders never need LibreOffice. The price is a
closed function list (``FUNCTIONS``); a formula calling anything else is refused when written
(``InvalidFormula``), which also guarantees LibreOffice and this engine agree on every stored formula.

Formulas are stored in Excel syntax without the leading ``=`` (``SUM(B2:E2)``, ``'Q1 plan'!B3*2``); ODS files
carry OpenFormula (``of:=SUM([.B2:.E2])``), converted on read and write by ``to_openformula`` /
``from_openformula``. Semantics follow the common ground of Excel and LibreOffice: blanks are 0 in arithmetic,
text that looks like a number is converted in arithmetic, range arguments of SUM-like functions skip text,
errors propagate, ROUND rounds half away from zero on the decimal representation. Where the two differ,
LibreOffice wins, since it is the engine that recalculates when installed: booleans in ranges count as 1/0
(LibreOffice stores them as numbers; Excel skips them), so COUNT, SUM and SUMIF see them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from decimal import ROUND_DOWN, ROUND_HALF_UP, ROUND_UP, Decimal
from functools import lru_cache
from typing import Any

from worlds.office.a1 import (
    MAX_COLS,
    MAX_ROWS,
    Area,
    cell_name,
    col_index,
    col_letters,
    parse_range,
    quote_sheet,
    split_sheet,
)
from worlds.office.errors import InvalidCell, InvalidFormula
from worlds.office.model import ERROR_CODES, Err, Value, Workbook

MAX_FORMULA = 2000
MAX_DEPTH = 64
_CELLRE = r"\$?[A-Za-z]{1,3}\$?[0-9]{1,7}"
_TOKEN = re.compile(
    r"""(?P<ws>\s+)
    |(?P<str>"(?:[^"]|"")*")
    |(?P<err>\#(?:NULL!|DIV/0!|VALUE!|REF!|NAME\?|NUM!|N/A))
    |(?P<ref>(?:(?:'(?:[^']|'')+'|[A-Za-z_][A-Za-z0-9_.]*)!)?"""
    + _CELLRE
    + r"""(?::"""
    + _CELLRE
    + r""")?(?![A-Za-z0-9_.(!]))
    |(?P<num>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    |(?P<id>[A-Za-z_\\][A-Za-z0-9_.]*)
    |(?P<op><=|>=|<>|[-+*/^&=<>%])
    |(?P<lp>\()|(?P<rp>\))|(?P<comma>,)""",
    re.X,
)

Node = tuple[Any, ...]


def tokenize(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens of an Excel formula (whitespace dropped).

    Raises:
        InvalidFormula: a character that starts no token.
    """
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise InvalidFormula(f"unexpected {text[pos : pos + 12]!r} at position {pos + 1} of the formula")
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append((kind, m.group()))
        pos = m.end()
    return out


def _ref_node(text: str) -> Node:
    sheet, rest = split_sheet(text)
    first, _, last = rest.partition(":")
    corners = []
    for part in (first, last or first):
        m = re.fullmatch(r"\$?([A-Za-z]{1,3})\$?([0-9]{1,7})", part)
        assert m is not None
        row, col = int(m.group(2)) - 1, col_index(m.group(1))
        if not (0 <= row < MAX_ROWS and 0 <= col < MAX_COLS):
            raise InvalidFormula(f"reference {text!r} is outside A1:XFD1048576")
        corners.append((row, col))
    (a, b), (c, d) = corners
    return ("area", sheet, min(a, c), min(b, d), max(a, c), max(b, d))


class _Parser:
    """Precedence climbing: comparison < & < +- < */ < ^ < unary -/+ < % < primary (Excel's order)."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.toks = tokens
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, kind: str, what: str) -> None:
        tok = self.take()
        if tok[0] != kind:
            raise InvalidFormula(f"expected {what}; found {tok[1] or 'the end of the formula'!r}")

    def parse(self) -> Node:
        node = self.binary(0, 0)
        if self.peek()[0] != "end":
            raise InvalidFormula(f"unexpected {self.peek()[1]!r} after a complete expression")
        return node

    LEVELS: tuple[frozenset[str], ...] = (
        frozenset({"=", "<>", "<", ">", "<=", ">="}),
        frozenset({"&"}),
        frozenset({"+", "-"}),
        frozenset({"*", "/"}),
        frozenset({"^"}),
    )

    def binary(self, level: int, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise InvalidFormula(f"the formula nests deeper than {MAX_DEPTH} levels")
        if level == len(self.LEVELS):
            return self.unary(depth)
        node = self.binary(level + 1, depth + 1)
        while self.peek()[0] == "op" and self.peek()[1] in self.LEVELS[level]:
            op = self.take()[1]
            node = ("bin", op, node, self.binary(level + 1, depth + 1))
        return node

    def unary(self, depth: int) -> Node:
        if self.peek() in (("op", "-"), ("op", "+")):
            op = self.take()[1]
            return ("neg", self.unary(depth + 1)) if op == "-" else ("pos", self.unary(depth + 1))
        node = self.primary(depth)
        while self.peek() == ("op", "%"):
            self.take()
            node = ("pct", node)
        return node

    def primary(self, depth: int) -> Node:
        kind, text = self.take()
        if kind == "num":
            return ("lit", float(text))
        if kind == "str":
            return ("lit", text[1:-1].replace('""', '"'))
        if kind == "err":
            return ("lit", Err(text))
        if kind == "ref":
            return _ref_node(text)
        if kind == "lp":
            node = self.binary(0, depth + 1)
            self.expect("rp", "')'")
            return node
        if kind == "id":
            if self.peek()[0] == "lp":
                return self.call(text.upper(), depth)
            if text.upper() in ("TRUE", "FALSE"):
                return ("lit", text.upper() == "TRUE")
            return ("name", text)
        raise InvalidFormula(f"expected a value, reference or function; found {text or 'the end of the formula'!r}")

    def call(self, fname: str, depth: int) -> Node:
        if fname not in FUNCTIONS:
            raise InvalidFormula(f"unknown function {fname}; supported: {', '.join(sorted(FUNCTIONS))}")
        self.take()
        args: list[Node] = []
        if self.peek()[0] == "rp":
            self.take()
        else:
            while True:
                args.append(self.binary(0, depth + 1))
                tok = self.take()
                if tok[0] == "rp":
                    break
                if tok[0] != "comma":
                    raise InvalidFormula(f"expected ',' or ')' in {fname}(...); found {tok[1] or 'the end'!r}")
        lo, hi = FUNCTIONS[fname][1]
        if not lo <= len(args) <= hi:
            raise InvalidFormula(f"{fname} takes {lo}-{hi} arguments; got {len(args)}")
        return ("call", fname, tuple(args))


@lru_cache(maxsize=4096)
def parse(formula: str) -> Node:
    """The syntax tree of an Excel formula (with or without the leading ``=``); cached by text.

    Raises:
        InvalidFormula: empty, too long, malformed, or calling a function outside ``FUNCTIONS``.
    """
    body = formula[1:] if formula.startswith("=") else formula
    if not body.strip():
        raise InvalidFormula("expected a formula after '='; got nothing")
    if len(body) > MAX_FORMULA:
        raise InvalidFormula(f"a formula may have at most {MAX_FORMULA} characters; got {len(body)}")
    return _Parser(tokenize(body)).parse()


def references(node: Node) -> Iterator[Node]:
    """Every ``area`` and ``name`` node of a tree."""
    if node[0] in ("area", "name"):
        yield node
    elif node[0] == "call":
        for a in node[2]:
            yield from references(a)
    elif node[0] == "bin":
        yield from references(node[2])
        yield from references(node[3])
    elif node[0] in ("neg", "pos", "pct"):
        yield from references(node[1])


def shift(formula: str, d_row: int, d_col: int) -> str:
    """``formula`` with its relative references moved by (d_row, d_col) (shared formulas in XLSX files).

    Raises:
        InvalidFormula: a reference would move off the sheet.
    """
    out = []
    for kind, text in tokenize(formula):
        if kind == "ref":
            sheet, rest = split_sheet(text)
            moved = []
            for part in rest.split(":"):
                m = re.fullmatch(r"(\$?)([A-Za-z]{1,3})(\$?)([0-9]{1,7})", part)
                assert m is not None
                col = col_index(m.group(2)) + (0 if m.group(1) else d_col)
                row = int(m.group(4)) - 1 + (0 if m.group(3) else d_row)
                if not (0 <= row < MAX_ROWS and 0 <= col < MAX_COLS):
                    raise InvalidFormula(f"shifting {text!r} moves it off the sheet")
                moved.append(f"{m.group(1)}{col_letters(col)}{m.group(3)}{row + 1}")
            out.append((f"{quote_sheet(sheet)}!" if sheet is not None else "") + ":".join(moved))
        else:
            out.append(text)
    return "".join(out)


# -- OpenFormula (ODS) translation ---------------------------------------------------------------------------


def to_openformula(formula: str) -> str:
    """``SUM(B2:E2)`` -> ``of:=SUM([.B2:.E2])``; ``'Q1'!A1`` -> ``[$'Q1'.A1]``; ``,`` -> ``;``."""
    out = []
    for kind, text in tokenize(formula):
        if kind == "ref":
            sheet, rest = split_sheet(text)
            first, _, last = rest.partition(":")
            pre = f"${quote_sheet_of(sheet)}." if sheet is not None else "."
            out.append(f"[{pre}{first}" + (f":.{last}" if last else "") + "]")
        elif kind == "comma":
            out.append(";")
        else:
            out.append(text)
    return "of:=" + "".join(out)


def quote_sheet_of(name: str) -> str:
    """A sheet name inside an OpenFormula reference (quoted unless plain)."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name
    return "'" + name.replace("'", "''") + "'"


_OF_PART = re.compile(r"\$?(?:'((?:[^']|'')+)'|([^.']*))\.(\$?[A-Za-z]{1,3}\$?[0-9]{1,7})")


def from_openformula(text: str) -> str:
    """``of:=SUM([.B2:.E2])`` -> ``SUM(B2:E2)`` (Excel syntax, no ``=``).

    Raises:
        InvalidFormula: a reference form we do not support (3-D ranges, whole rows or columns, other files).
    """
    body = text.split(":", 1)[1] if re.match(r"^[a-z]+:", text) else text
    body = body[1:] if body.startswith("=") else body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == '"':
            j = i + 1
            while j < len(body):
                if body[j] == '"' and body[j + 1 : j + 2] == '"':
                    j += 2
                    continue
                if body[j] == '"':
                    break
                j += 1
            out.append(body[i : j + 1])
            i = j + 1
        elif ch == "[":
            j = body.find("]", i)
            if j < 0:
                raise InvalidFormula(f"unclosed reference in {text[:60]!r}")
            out.append(_of_ref(body[i + 1 : j]))
            i = j + 1
        elif ch == ";":
            out.append(",")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def of_reference(address: str) -> Area:
    """The Area of an ODF cell-range address such as ``$Budget.$B$2:.$B$5``.

    Raises:
        InvalidFormula: not a single- or two-corner address on one sheet.
    """
    try:
        return parse_range(_of_ref(address.strip("[]")))
    except InvalidCell as exc:
        raise InvalidFormula(str(exc)) from None


def _of_ref(inner: str) -> str:
    parts = []
    pos = 0
    while pos < len(inner):
        m = _OF_PART.match(inner, pos)
        if m is None:
            raise InvalidFormula(f"unsupported reference [{inner[:60]}]")
        sheet = m.group(1).replace("''", "'") if m.group(1) is not None else (m.group(2) or None)
        parts.append((sheet, m.group(3)))
        pos = m.end()
        if pos < len(inner):
            if inner[pos] != ":":
                raise InvalidFormula(f"unsupported reference [{inner[:60]}]")
            pos += 1
    if not 1 <= len(parts) <= 2 or (len(parts) == 2 and parts[1][0] not in (None, parts[0][0])):
        raise InvalidFormula(f"unsupported reference [{inner[:60]}] (3-D ranges are not supported)")
    sheet = parts[0][0]
    body = ":".join(p[1] for p in parts)
    return f"{quote_sheet(sheet)}!{body}" if sheet else body


# -- evaluation ------------------------------------------------------------------------------------------------

Grid = list[list[Value]]


class _Range:
    """A range argument: its cells' values row by row."""

    __slots__ = ("rows",)

    def __init__(self, rows: Grid) -> None:
        self.rows = rows

    def flat(self) -> Iterator[Value]:
        for row in self.rows:
            yield from row


def number_text(x: float) -> str:
    """A number as text the way spreadsheets show it in General format (15 significant digits)."""
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.15g}"


def to_number(v: Value | _Range) -> float | Err:
    """A value in arithmetic: blank 0, bool 0/1, numeric text converted, other text #VALUE!."""
    if isinstance(v, _Range):
        if len(v.rows) == 1 and len(v.rows[0]) == 1:
            return to_number(v.rows[0][0])
        return Err("#VALUE!")
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, float | int):
        return float(v)
    if isinstance(v, Err):
        return v
    try:
        out = float(v.strip())
    except ValueError:
        return Err("#VALUE!")
    return out if math.isfinite(out) and v.strip() else Err("#VALUE!")


def to_text(v: Value | _Range) -> str | Err:
    """A value as text: blank "", numbers in General format, TRUE/FALSE."""
    if isinstance(v, _Range):
        return to_text(v.rows[0][0]) if len(v.rows) == 1 and len(v.rows[0]) == 1 else Err("#VALUE!")
    if v is None:
        return ""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float | int):
        return number_text(float(v))
    return v


def to_bool(v: Value | _Range) -> bool | Err:
    """A value as a condition: numbers non-zero, TRUE/FALSE text, blank FALSE."""
    if isinstance(v, _Range):
        return to_bool(v.rows[0][0]) if len(v.rows) == 1 and len(v.rows[0]) == 1 else Err("#VALUE!")
    if isinstance(v, Err | bool):
        return v
    if v is None:
        return False
    if isinstance(v, float | int):
        return v != 0
    if v.upper() in ("TRUE", "FALSE"):
        return v.upper() == "TRUE"
    return Err("#VALUE!")


def _scalar(v: Value | _Range) -> Value:
    if isinstance(v, _Range):
        return v.rows[0][0] if len(v.rows) == 1 and len(v.rows[0]) == 1 else Err("#VALUE!")
    return v


def _rank(v: Value) -> int:
    return 0 if isinstance(v, float | int) and not isinstance(v, bool) else 1 if isinstance(v, str) else 2


def compare(a: Value, b: Value) -> int:
    """Spreadsheet ordering: numbers < text (case-insensitive) < booleans; blank is 0 or ""."""
    if a is None:
        a = "" if isinstance(b, str) else False if isinstance(b, bool) else 0.0
    if b is None:
        b = "" if isinstance(a, str) else False if isinstance(a, bool) else 0.0
    ra, rb = _rank(a), _rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    x: Any = a.lower() if isinstance(a, str) else a
    y: Any = b.lower() if isinstance(b, str) else b
    return int(x > y) - int(x < y)


def _arith(op: str, x: float, y: float) -> float | Err:
    if op == "+":
        out = x + y
    elif op == "-":
        out = x - y
    elif op == "*":
        out = x * y
    elif op == "/":
        if y == 0:
            return Err("#DIV/0!")
        out = x / y
    else:
        if x == 0 and y <= 0:
            return Err("#DIV/0!") if y < 0 else Err("#NUM!")
        try:
            out = x**y
        except (OverflowError, ZeroDivisionError):
            return Err("#NUM!")
        if isinstance(out, complex):
            return Err("#NUM!")
    return out if math.isfinite(out) else Err("#NUM!")


_CMP: dict[str, Callable[[int], bool]] = {
    "=": lambda c: c == 0,
    "<>": lambda c: c != 0,
    "<": lambda c: c < 0,
    ">": lambda c: c > 0,
    "<=": lambda c: c <= 0,
    ">=": lambda c: c >= 0,
}


class Evaluator:
    """Computes formula cells of a workbook on demand, memoised, refusing cycles.

    Args:
        book: The workbook; its formula cells' cached values are ignored and recomputed.
    """

    def __init__(self, book: Workbook) -> None:
        self.book = book
        self.memo: dict[tuple[int, int, int], Value] = {}
        self.active: set[tuple[int, int, int]] = set()
        self.index = {s.name.lower(): i for i, s in enumerate(book.sheets)}

    def all(self) -> dict[tuple[int, int, int], Value]:
        """Values of every formula cell, keyed by (sheet index, row, col)."""
        for si, sheet in enumerate(self.book.sheets):
            for (r, c), cell in sorted(sheet.cells.items()):
                if cell.formula is not None:
                    self.cell(si, r, c)
        return {k: v for k, v in self.memo.items() if self._is_formula(*k)}

    def _is_formula(self, si: int, r: int, c: int) -> bool:
        cell = self.book.sheets[si].cells.get((r, c))
        return cell is not None and cell.formula is not None

    def cell(self, si: int, r: int, c: int) -> Value:
        """The value of one cell, computing its formula (and what it depends on) if needed."""
        key = (si, r, c)
        if key in self.memo:
            return self.memo[key]
        cell = self.book.sheets[si].cells.get((r, c))
        if cell is None:
            return None
        if cell.formula is None:
            return cell.value
        if key in self.active:
            raise InvalidFormula(f"circular reference through {self.book.sheets[si].name}!{cell_name(r, c)}")
        self.active.add(key)
        try:
            out = _scalar(self.eval(parse(cell.formula), si))
        finally:
            self.active.discard(key)
        if isinstance(out, float) and not math.isfinite(out):
            out = Err("#NUM!")
        self.memo[key] = out
        return out

    def _sheet(self, name: str | None, si: int) -> int:
        if name is None:
            return si
        found = self.index.get(name.lower())
        if found is None:
            raise InvalidFormula(f"the formula refers to a sheet {name!r} that does not exist")
        return found

    def area(self, si: int, r1: int, c1: int, r2: int, c2: int) -> _Range | Value:
        """A single cell's value or a range of values (blanks as None)."""
        if r1 == r2 and c1 == c2:
            return self.cell(si, r1, c1)
        cells = self.book.sheets[si].cells
        rows: Grid = []
        for r in range(r1, r2 + 1):
            row: list[Value] = []
            for c in range(c1, c2 + 1):
                row.append(self.cell(si, r, c) if (r, c) in cells else None)
            rows.append(row)
        return _Range(rows)

    def eval(self, node: Node, si: int) -> Value | _Range:
        """Evaluate a tree in the context of sheet ``si``."""
        tag = node[0]
        if tag == "lit":
            return node[1]  # type: ignore[no-any-return]
        if tag == "area":
            _, sheet, r1, c1, r2, c2 = node
            return self.area(self._sheet(sheet, si), r1, c1, r2, c2)
        if tag == "name":
            named = _lookup_name(self.book, node[1])
            return self.area(self._sheet(named.sheet, si), named.r1, named.c1, named.r2, named.c2)
        if tag == "call":
            return FUNCTIONS[node[1]][0](self, si, node[2])
        if tag in ("neg", "pos", "pct"):
            x = to_number(self.eval(node[1], si))
            if isinstance(x, Err):
                return x
            return -x if tag == "neg" else x if tag == "pos" else x / 100
        _, op, left, right = node
        a, b = _scalar(self.eval(left, si)), _scalar(self.eval(right, si))
        if op in _CMP:
            if isinstance(a, Err):
                return a
            if isinstance(b, Err):
                return b
            return _CMP[op](compare(a, b))
        if op == "&":
            sa, sb = to_text(a), to_text(b)
            if isinstance(sa, Err):
                return sa
            return sb if isinstance(sb, Err) else sa + sb
        x, y = to_number(a), to_number(b)
        if isinstance(x, Err):
            return x
        if isinstance(y, Err):
            return y
        return _arith(op, x, y)


def _lookup_name(book: Workbook, name: str) -> Area:
    for key, value in book.names.items():
        if key.lower() == name.lower():
            return value
    raise InvalidFormula(f"the formula uses a name {name!r} that is not defined")


def recalculate(book: Workbook) -> dict[tuple[int, int, int], Value]:
    """Values of every formula cell of ``book`` by the Python engine (does not modify ``book``)."""
    return Evaluator(book).all()


def validate(book: Workbook, formula: str) -> Node:
    """Parse ``formula`` and check every sheet and name it refers to exists in ``book``.

    Raises:
        InvalidFormula: as ``parse``, or naming a missing sheet or undefined name.
    """
    node = parse(formula)
    for ref in references(node):
        if ref[0] == "area" and ref[1] is not None and not book.has_sheet(ref[1]):
            raise InvalidFormula(f"the formula refers to a sheet {ref[1]!r} that does not exist")
        if ref[0] == "name":
            _lookup_name(book, ref[1])
    return node


# -- functions --------------------------------------------------------------------------------------------------

Fn = Callable[[Evaluator, int, tuple[Node, ...]], Value]


def _numbers(ev: Evaluator, si: int, args: tuple[Node, ...], *, count_all: bool = False) -> list[float] | Err:
    """Numbers of the arguments: ranges give their numbers only; direct arguments are converted."""
    out: list[float] = []
    for a in args:
        v = ev.eval(a, si)
        if isinstance(v, _Range):
            for x in v.flat():
                if isinstance(x, Err):
                    return x
                if isinstance(x, float | int):  # booleans too: LibreOffice stores them as 1/0
                    out.append(float(x))
        else:
            if isinstance(v, Err):
                return v
            if v is None and not count_all:
                continue
            n = to_number(v)
            if isinstance(n, Err):
                return n
            out.append(n)
    return out


def _agg(fn: Callable[[list[float]], Value]) -> Fn:
    def run(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
        nums = _numbers(ev, si, args)
        return nums if isinstance(nums, Err) else fn(nums)

    return run


def _average(nums: list[float]) -> Value:
    return Err("#DIV/0!") if not nums else math.fsum(nums) / len(nums)


def _product(nums: list[float]) -> Value:
    return math.prod(nums) if nums else 0.0


def _count(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
    n = 0
    for a in args:
        v = ev.eval(a, si)
        items = list(v.flat()) if isinstance(v, _Range) else [v]
        n += sum(1 for x in items if isinstance(x, float | int))
    return float(n)


def _counta(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
    n = 0
    for a in args:
        v = ev.eval(a, si)
        items = list(v.flat()) if isinstance(v, _Range) else [v]
        n += sum(1 for x in items if x is not None)
    return float(n)


def _if(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
    cond = to_bool(ev.eval(args[0], si))
    if isinstance(cond, Err):
        return cond
    if cond:
        return _scalar(ev.eval(args[1], si)) if len(args) > 1 else True
    return _scalar(ev.eval(args[2], si)) if len(args) > 2 else False


def _iferror(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
    v = _scalar(ev.eval(args[0], si))
    return _scalar(ev.eval(args[1], si)) if isinstance(v, Err) else v


def _logic(all_of: bool) -> Fn:
    def run(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
        seen: list[bool] = []
        for a in args:
            v = ev.eval(a, si)
            for x in v.flat() if isinstance(v, _Range) else [v]:
                if isinstance(x, Err):
                    return x
                if x is None or (isinstance(x, str) and isinstance(v, _Range)):
                    continue
                b = to_bool(x)
                if isinstance(b, Err):
                    return b
                seen.append(b)
        if not seen:
            return Err("#VALUE!")
        return all(seen) if all_of else any(seen)

    return run


def _not(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
    b = to_bool(ev.eval(args[0], si))
    return b if isinstance(b, Err) else not b


def _nums(ev: Evaluator, si: int, args: tuple[Node, ...]) -> list[float] | Err:
    out = []
    for a in args:
        n = to_number(ev.eval(a, si))
        if isinstance(n, Err):
            return n
        out.append(n)
    return out


def _round(mode: str) -> Fn:
    def run(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
        nums = _nums(ev, si, args)
        if isinstance(nums, Err):
            return nums
        x, digits = nums[0], int(nums[1]) if len(nums) > 1 else 0
        if not -300 < digits < 300:
            return Err("#NUM!")
        q = Decimal(1).scaleb(-digits)
        rounding = {"half": ROUND_HALF_UP, "up": ROUND_UP, "down": ROUND_DOWN}[mode]
        return float(Decimal(repr(x)).quantize(q, rounding=rounding)) if digits > -20 else 0.0

    return run


def _math1(fn: Callable[[float], float | Err]) -> Fn:
    def run(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
        x = to_number(ev.eval(args[0], si))
        return x if isinstance(x, Err) else fn(x)

    return run


def _mod(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
    nums = _nums(ev, si, args)
    if isinstance(nums, Err):
        return nums
    x, y = nums
    return Err("#DIV/0!") if y == 0 else x - y * math.floor(x / y)


def _power(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
    nums = _nums(ev, si, args)
    return nums if isinstance(nums, Err) else _arith("^", nums[0], nums[1])


def _concat(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
    parts = []
    for a in args:
        t = to_text(ev.eval(a, si))
        if isinstance(t, Err):
            return t
        parts.append(t)
    return "".join(parts)


def _text1(fn: Callable[[str], Value]) -> Fn:
    def run(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
        t = to_text(ev.eval(args[0], si))
        return t if isinstance(t, Err) else fn(t)

    return run


def _side(left: bool) -> Fn:
    def run(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
        t = to_text(ev.eval(args[0], si))
        n = to_number(ev.eval(args[1], si)) if len(args) > 1 else 1.0
        if isinstance(t, Err):
            return t
        if isinstance(n, Err):
            return n
        if n < 0:
            return Err("#VALUE!")
        k = int(n)
        return t[:k] if left else (t[len(t) - k :] if k else "")

    return run


def _criterion(ev: Evaluator, si: int, node: Node) -> Callable[[Value], bool] | Err:
    """A COUNTIF/SUMIF criterion: a value (equality) or text with an operator prefix and * ? wildcards."""
    crit = _scalar(ev.eval(node, si))
    if isinstance(crit, Err):
        return crit
    if not isinstance(crit, str):
        return lambda v: v is not None and not isinstance(v, Err) and compare(v, crit) == 0
    m = re.match(r"^(<=|>=|<>|<|>|=)?(.*)$", crit, re.S)
    assert m is not None
    op, rest = m.group(1) or "=", m.group(2)
    target: Value = rest
    n = to_number(rest)
    if rest.strip() and not isinstance(n, Err):
        target = n
    elif rest.upper() in ("TRUE", "FALSE"):
        target = rest.upper() == "TRUE"
    if isinstance(target, str) and op in ("=", "<>"):
        pattern = _wildcard(target)
        if op == "=":
            return lambda v: (v is None and target == "") or (isinstance(v, str) and bool(pattern.fullmatch(v)))
        return lambda v: not ((v is None and target == "") or (isinstance(v, str) and bool(pattern.fullmatch(v))))
    check = _CMP[op]
    return lambda v: (
        v is not None and not isinstance(v, Err) and _rank(v) == _rank(target) and check(compare(v, target))
    )


def _wildcard(target: str) -> re.Pattern[str]:
    """A case-insensitive pattern for criterion text: ``*`` any run, ``?`` one character, ``~`` escapes."""
    out, i = [], 0
    while i < len(target):
        ch = target[i]
        if ch == "~" and i + 1 < len(target):
            out.append(re.escape(target[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "*" else "." if ch == "?" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.I | re.S)


def _countif(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
    rng = ev.eval(args[0], si)
    test = _criterion(ev, si, args[1])
    if isinstance(test, Err):
        return test
    cells = list(rng.flat()) if isinstance(rng, _Range) else [rng]
    return float(sum(1 for v in cells if test(v)))


def _sumif(ev: Evaluator, si: int, args: tuple[Node, ...]) -> Value:
    rng = ev.eval(args[0], si)
    test = _criterion(ev, si, args[1])
    if isinstance(test, Err):
        return test
    crit_cells = list(rng.flat()) if isinstance(rng, _Range) else [rng]
    if len(args) > 2:
        if args[2][0] != "area":
            return Err("#VALUE!")
        _, sheet, r1, c1, _, _ = args[2]
        rows = len(rng.rows) if isinstance(rng, _Range) else 1
        cols = len(rng.rows[0]) if isinstance(rng, _Range) else 1
        summed = ev.area(ev._sheet(sheet, si), r1, c1, r1 + rows - 1, c1 + cols - 1)
        sum_cells = list(summed.flat()) if isinstance(summed, _Range) else [summed]
    else:
        sum_cells = crit_cells
    total = []
    for c, s in zip(crit_cells, sum_cells, strict=False):
        if test(c):
            if isinstance(s, Err):
                return s
            if isinstance(s, float | int):
                total.append(float(s))
    return math.fsum(total)


def _sqrt(x: float) -> float | Err:
    return Err("#NUM!") if x < 0 else math.sqrt(x)


FUNCTIONS: dict[str, tuple[Fn, tuple[int, int]]] = {
    "SUM": (_agg(lambda n: math.fsum(n)), (1, 255)),
    "AVERAGE": (_agg(_average), (1, 255)),
    "MIN": (_agg(lambda n: min(n) if n else 0.0), (1, 255)),
    "MAX": (_agg(lambda n: max(n) if n else 0.0), (1, 255)),
    "PRODUCT": (_agg(_product), (1, 255)),
    "COUNT": (_count, (1, 255)),
    "COUNTA": (_counta, (1, 255)),
    "IF": (_if, (1, 3)),
    "IFERROR": (_iferror, (2, 2)),
    "AND": (_logic(True), (1, 255)),
    "OR": (_logic(False), (1, 255)),
    "NOT": (_not, (1, 1)),
    "TRUE": (lambda ev, si, a: True, (0, 0)),
    "FALSE": (lambda ev, si, a: False, (0, 0)),
    "ROUND": (_round("half"), (1, 2)),
    "ROUNDUP": (_round("up"), (1, 2)),
    "ROUNDDOWN": (_round("down"), (1, 2)),
    "ABS": (_math1(abs), (1, 1)),
    "INT": (_math1(lambda x: float(math.floor(x))), (1, 1)),
    "SQRT": (_math1(_sqrt), (1, 1)),
    "MOD": (_mod, (2, 2)),
    "POWER": (_power, (2, 2)),
    "CONCATENATE": (_concat, (1, 255)),
    "LEN": (_text1(lambda t: float(len(t))), (1, 1)),
    "UPPER": (_text1(str.upper), (1, 1)),
    "LOWER": (_text1(str.lower), (1, 1)),
    "TRIM": (_text1(lambda t: re.sub(" +", " ", t.strip(" "))), (1, 1)),
    "LEFT": (_side(True), (1, 2)),
    "RIGHT": (_side(False), (1, 2)),
    "COUNTIF": (_countif, (2, 2)),
    "SUMIF": (_sumif, (2, 3)),
}
"""Supported functions: implementation and (min, max) argument count."""

assert all(code.startswith("#") for code in ERROR_CODES)

"""The report as one self-contained HTML page: server-rendered, no script, no external asset.

Why plain HTML: the report is read in a browser, attached to an issue, or walked by an accessibility tree (and
by agents reading one). Landmarks (banner, navigation, main, contentinfo), one ``h1``, an ``h2`` per section
and episode, tables with captions and header cells, and plots as images with alt text written from the same
numbers the tables hold. Plots are embedded as ``data:`` SVG so the page is complete on its own; the same
plots are written beside it as PNG and SVG files.

Nothing here reads a clock or the file system: the page is a function of the episodes, so the same traces
give the same bytes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from sim.view.model import Divergence, EpisodeView, fault_table, reward_table
from sim.view.plots import Plot

CLIP = 1200
"""Characters of a JSON value shown before it is cut (the trace holds the rest)."""
FOLD = 100
"""Characters of a result shown inline; a longer one is folded into a disclosure."""

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1b1b;background:#fff;line-height:1.4}
header,main,footer,nav{padding:0 1.5rem}
header{border-bottom:2px solid #1f5fa8}
h1{font-size:1.5rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ccc}h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.85rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border:1px solid #c8c8c8;padding:.2rem .4rem;vertical-align:top;text-align:left}
th{background:#f0f3f7}
pre{margin:0;white-space:pre-wrap;word-break:break-word;max-width:46rem;font-size:.8rem}
tr.fault td,tr.fault th{background:#fdecea}
tr.diverge td,tr.diverge th{background:#fff4d6;font-weight:600}
.pass{color:#176b2c;font-weight:600}.fail{color:#b3261e;font-weight:600}
dl{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem}dt{font-weight:600}dd{margin:0}
summary{cursor:pointer}code.tool{white-space:nowrap}code{font-size:.8rem;word-break:break-word}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #ddd}
nav ul{columns:2;font-size:.85rem}
"""


def _json(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False, default=str)
    if len(text) > CLIP:
        text = f"{text[:CLIP]}\n... ({len(text) - CLIP} more characters in the trace)"
    return text


def _pre(value: Any) -> str:
    return f"<pre>{escape(_json(value))}</pre>"


def _table(caption: str, head: Sequence[str], rows: Iterable[str], *, label: str | None = None) -> str:
    """A table with a caption (its accessible name) and column header cells; ``rows`` are ready ``<tr>`` HTML."""
    body = "".join(rows)
    cols = "".join(f'<th scope="col">{escape(h)}</th>' for h in head)
    ident = f' id="{label}"' if label else ""
    return (
        f"<table{ident}><caption>{escape(caption)}</caption><thead><tr>{cols}</tr></thead><tbody>{body}</tbody></table>"
    )


def _dl(items: Mapping[str, str]) -> str:
    return "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in items.items()) + "</dl>"


def _anchor(index: int) -> str:
    return f"ep-{index}"


def _folded(value: Any) -> str:
    """A short value inline; a long one as a disclosure whose summary is its start (no script: ``<details>``)."""
    compact = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    if len(compact) <= FOLD:
        return f"<code>{escape(compact)}</code>"
    return f"<details><summary><code>{escape(compact[:FOLD])}…</code></summary>{_pre(value)}</details>"


def _outcome(step: Mapping[str, Any]) -> str:
    error = step.get("error")
    if error:
        return f'<span class="fail">error [{escape(str(error.get("code")))}]</span> {escape(str(error.get("message")))}'
    return _folded(step.get("result"))


def _fault(step: Mapping[str, Any]) -> str:
    fault = step.get("fault")
    if not fault:
        return ""
    extra = ", ".join(f"{k} {fault[k]}" for k in ("request_id", "call_index") if k in fault)
    return f"<strong>injected fault: {escape(str(fault.get('type')))}</strong> ({escape(extra)})"


def _timeline(ep: EpisodeView, index: int) -> str:
    rows = []
    for step in ep.steps:
        i = int(step.get("index", 0))
        action = step.get("action") or {}
        faulted = bool(step.get("fault"))
        npc = ep.coworkers.get(i, [])
        coworkers = "".join(
            f"<li>{escape(a.at[11:19])} {escape(a.actor)}: {escape(a.op)} {escape(a.table)} {escape(a.key)}"
            f" ({escape(a.summary)})</li>"
            for a in npc
        )
        rows.append(
            f'<tr{" class=fault" if faulted else ""} id="{_anchor(index)}-step-{i}"><th scope="row">{i}</th>'
            f"<td>{escape(str(step.get('clock')))}</td>"
            f"<td><code class=tool>{escape(str(action.get('name')))}</code></td>"
            f"<td>{_folded(action.get('arguments'))}</td><td>{_outcome(step)}</td><td>{_fault(step)}</td>"
            f"<td>{f'<ul>{coworkers}</ul>' if coworkers else ''}</td></tr>"
        )
    head = ("step", "simulated clock", "tool", "arguments", "result or error", "fault", "coworker actions")
    caption = f"Timeline of episode {index + 1}: {len(ep.steps)} steps, {len(ep.faults)} injected faults"
    return _table(caption, head, rows)


def _score(ep: EpisodeView, index: int) -> str:
    rubric = ep.rubric
    fingerprint = str(rubric.get("fingerprint") or "")[:12]
    facts = {
        "reward": f"{ep.reward:.3f}",
        "checks passed": f"{ep.checks_passed}/{len(ep.checks)}",
        "rubric": f"{rubric.get('id')} version {rubric.get('version')} (fingerprint {fingerprint})",
        "gated": "yes: a must-pass check failed" if ep.score.get("gated") else "no",
    }
    rows = []
    for check in ep.checks:
        ok = bool(check.get("passed"))
        verdict = '<span class="pass">passed</span>' if ok else '<span class="fail">failed</span>'
        rows.append(
            f'<tr><th scope="row">{escape(str(check.get("id")))}</th><td>{verdict}</td>'
            f"<td>{'must pass' if check.get('must') else ''}</td><td>{check.get('weight', 0):g}</td>"
            f"<td>{float(check.get('score', 0.0)):.3f}</td><td>{escape(str(check.get('evidence', '')))}</td></tr>"
        )
    head = ("check", "result", "gate", "weight", "score", "evidence")
    return _dl(facts) + _table(f"Checks of episode {index + 1}", head, rows)


def _values(kind: str, values: Mapping[str, Any]) -> str:
    if kind == "changed":
        lines = [f"{c}: {json.dumps(v[0], default=str)} → {json.dumps(v[1], default=str)}" for c, v in values.items()]
    else:
        lines = [f"{c} = {json.dumps(v, default=str, ensure_ascii=False)}" for c, v in values.items()]
    text = "\n".join(lines)
    if len(text) > CLIP:
        text = f"{text[:CLIP]}\n..."
    return f"<pre>{escape(text)}</pre>"


def _state(ep: EpisodeView, index: int) -> str:
    if not ep.replayed:
        return "<p>Not replayed (the report was made with <code>--no-replay</code>), so no state diff.</p>"
    if ep.mismatch is not None:
        return f'<p role="alert">The replay diverged, so the recorded final state is unknown: {escape(ep.mismatch)}</p>'
    if not ep.changes:
        return "<p>The episode left the state as it found it.</p>"
    counts: dict[str, int] = {}
    for change in ep.changes:
        counts[change.kind] = counts.get(change.kind, 0) + 1
    said = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
    rows = (
        f'<tr><th scope="row">{escape(c.table)} {escape(c.key)}</th><td>{escape(c.kind)}</td>'
        f"<td>{_values(c.kind, c.values)}</td></tr>"
        for c in ep.changes
    )
    caption = f"State before and after episode {index + 1}: {said} rows"
    return _table(caption, ("row (table, key)", "change", "values (before → after)"), rows)


def _episode(ep: EpisodeView, index: int) -> str:
    options = ep.header.get("options") or {}
    facts = {
        "trace": f"{ep.source}, episode #{ep.number}",
        "episode id": str(ep.header.get("episode_id", "")),
        "scenario": ep.scenario,
        "seed": str(ep.seed),
        "world seed": str(ep.world_seed),
        "difficulty": str(ep.difficulty),
        "actor": str(ep.header.get("actor", "")),
        "options": json.dumps(options, sort_keys=True, ensure_ascii=False),
        "companysim": str((ep.header.get("versions") or {}).get("companysim", "?")),
    }
    h = _anchor(index)
    return (
        f'<section id="{h}" aria-labelledby="{h}-h"><h2 id="{h}-h">Episode {index + 1}: {escape(ep.label)}</h2>'
        f"{_dl(facts)}<h3>Score</h3>{_score(ep, index)}<h3>Timeline</h3>{_timeline(ep, index)}"
        f"<h3>State diff</h3>{_state(ep, index)}</section>"
    )


def _side(step: Mapping[str, Any] | None) -> str:
    if step is None:
        return "<td>(no step: the run had ended)</td>"
    action = step.get("action") or {}
    fault = f" — {_fault(step)}" if step.get("fault") else ""
    args = escape(json.dumps(action.get("arguments"), sort_keys=True, ensure_ascii=False)[:200])
    error = step.get("error")
    result = f"error [{escape(str(error.get('code')))}]" if error else "ok"
    return f"<td><code>{escape(str(action.get('name')))}</code> {args}<br>{result}{fault}</td>"


def _comparison(number: int, div: Divergence, index_of: Mapping[int, int]) -> str:
    left, right = div.left, div.right
    title = f"Comparison {number}: {left.label} vs {right.label}"
    link_l, link_r = _anchor(index_of[id(left)]), _anchor(index_of[id(right)])
    if div.step is None:
        verdict = f"<p>No divergence: {escape(div.reason)} ({len(left.steps)} steps).</p>"
        last = min(len(left.steps), 3)
    else:
        verdict = f"<p><strong>First divergence at step {div.step}</strong>: {escape(div.reason)}.</p>"
        last = div.step + 3
    rows = []
    for i in range(min(max(len(left.steps), len(right.steps)), last)):
        a = left.steps[i] if i < len(left.steps) else None
        b = right.steps[i] if i < len(right.steps) else None
        here = i == div.step
        mark = "diverges here" if here else ("same" if div.step is None or i < div.step else "after divergence")
        rows.append(
            f'<tr{" class=diverge" if here else ""}><th scope="row">{i}</th>{_side(a)}{_side(b)}<td>{mark}</td></tr>'
        )
    head = ("step", f"run A: episode {index_of[id(left)] + 1}", f"run B: episode {index_of[id(right)] + 1}", "")
    table = _table(f"{title}, steps side by side", head, rows)
    run_a, run_b = f'<a href="#{link_l}">{escape(left.label)}</a>', f'<a href="#{link_r}">{escape(right.label)}</a>'
    links = f"<p>Run A: {run_a}; run B: {run_b}.</p>"
    return f"<h3>{escape(title)}</h3>{links}{verdict}{table}"


def _figure(plot: Plot) -> str:
    data = base64.b64encode(plot.svg).decode("ascii")
    files = f"{plot.name}.png, {plot.name}.svg"
    return (
        f'<figure aria-labelledby="fig-{plot.name}"><img src="data:image/svg+xml;base64,{data}"'
        f' alt="{escape(plot.description)}"><figcaption id="fig-{plot.name}">{escape(plot.description)}'
        f" Files: {escape(files)}.</figcaption></figure>"
    )


def _summary(episodes: Sequence[EpisodeView], plots: Sequence[Plot]) -> str:
    rewards = reward_table(episodes)
    reward_rows = (
        f'<tr><th scope="row">{escape(r.scenario)}</th><td>{r.difficulty}</td><td>{len(r.rewards)}</td>'
        f"<td>{r.mean:.3f}</td><td>{min(r.rewards):.3f}</td><td>{max(r.rewards):.3f}</td><td>{r.solved:.0%}</td></tr>"
        for r in rewards
    )
    faults = fault_table(episodes)
    fault_rows = (
        f'<tr><th scope="row"><code>{escape(tool)}</code></th><td>{calls}</td><td>{n}</td><td>{n / calls:.0%}</td></tr>'
        for tool, calls, n in faults
    )
    figures = "".join(_figure(p) for p in plots)
    return (
        '<section id="summary" aria-labelledby="summary-h"><h2 id="summary-h">Summary</h2>'
        + _table(
            "Reward by family and difficulty (calibration)",
            ("family", "difficulty", "episodes", "mean", "min", "max", "solved (reward 1)"),
            reward_rows,
        )
        + _table("Calls and injected faults per tool", ("tool", "calls", "faults", "fault rate"), fault_rows)
        + figures
        + "</section>"
    )


def render(episodes: Sequence[EpisodeView], divergences: Sequence[Divergence], plots: Sequence[Plot]) -> str:
    """The whole report page for ``episodes`` (in order), their ``divergences`` and the rendered ``plots``."""
    index_of = {id(ep): i for i, ep in enumerate(episodes)}
    nav = "".join(
        f'<li><a href="#{_anchor(i)}">Episode {i + 1}: {escape(ep.label)}, reward {ep.reward:.3f}</a></li>'
        for i, ep in enumerate(episodes)
    )
    if divergences:
        compared = "".join(_comparison(n + 1, d, index_of) for n, d in enumerate(divergences))
    else:
        compared = "<p>No task was run more than once in these traces, so there is nothing to compare.</p>"
    sources = sorted({ep.source for ep in episodes})
    title = f"companysim replay: {len(episodes)} episode{'s' if len(episodes) != 1 else ''}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{escape(title)}</h1><p>Traces: {escape(', '.join(sources))}</p></header>"
        f'<nav aria-label="Episodes"><h2>Episodes</h2><ul>{nav}</ul></nav>'
        f"<main>{_summary(episodes, plots)}"
        f'<section id="comparisons" aria-labelledby="comparisons-h"><h2 id="comparisons-h">Comparisons</h2>'
        f"{compared}</section>" + "".join(_episode(ep, i) for i, ep in enumerate(episodes)) + "</main>"
        "<footer><p>Rendered by <code>companysim view</code> from the traces alone: the same traces give the same "
        "page.</p></footer></body></html>\n"
    )

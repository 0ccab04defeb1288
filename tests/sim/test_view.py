"""The replay viewer and the dataset export (issue 16 item 3): what a user sees in the report, and reads back.

Traces come from real episodes: triage with the realistic noise profile (faults injected), the same task
without noise and with the random agent (so there is something to compare), and the scheduling task with
adversarial coworkers (NPC actions during steps).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from sim.agents import run_agent
from sim.episode import Episode
from sim.trace import TraceWriter, read_trace
from sim.view import report

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "sim.cli"]


class Page(HTMLParser):
    """The text of every element with an id, the classes of table rows, and the tags used."""

    def __init__(self, html):
        super().__init__()
        self.text: dict[str, str] = {}
        self.row_class: dict[str, str] = {}
        self.tags: list[tuple[str, dict]] = []
        self._open: list[str | None] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag in ("br", "meta", "img"):
            return
        ident = attrs.get("id")
        self._open.append(ident)
        if ident:
            self.text[ident] = ""
            if tag == "tr":
                self.row_class[ident] = attrs.get("class") or ""

    def handle_endtag(self, tag):
        if tag not in ("br", "meta", "img") and self._open:
            self._open.pop()

    def handle_data(self, data):
        for ident in self._open:
            if ident:
                self.text[ident] += data


def _record(path, scenario, runs, store):
    writer = TraceWriter(path)
    with Episode(scenario, store=store, trace=writer) as ep:
        for agent, seed, options in runs:
            run_agent(ep, agent, seed, options)
    writer.close()
    return path


@pytest.fixture(scope="module")
def traces(tmp_path_factory, store):
    root = tmp_path_factory.mktemp("view")
    noisy = _record(
        root / "triage.jsonl",
        "triage-tickets-v0",
        [
            ("oracle", 3, {"difficulty": 2, "noise": "realistic"}),
            ("oracle", 3, {"difficulty": 2}),
            ("random", 3, {"difficulty": 2}),
        ],
        store,
    )
    npcs = _record(
        root / "schedule.jsonl", "schedule-with-coworkers-v0", [("oracle", 6, {"npcs": "adversarial"})], store
    )
    return [noisy, npcs]


@pytest.fixture(scope="module")
def page(traces, store):
    done = report(traces, store=store)
    return done, Page(done.files["index.html"].decode())


def _episodes(traces):
    return [records for path in traces for records in read_trace(path)]


def test_view__every_step_is_on_the_timeline_and_faulted_steps_are_marked(traces, page):
    done, html = page
    episodes = _episodes(traces)
    assert len(done.episodes) == len(episodes) == 4
    faulted = 0
    for i, records in enumerate(episodes):
        for step in records[1:-1]:
            row = f"ep-{i}-step-{step['index']}"
            text, cls = html.text[row], html.row_class[row]
            assert step["action"]["name"] in text and step["clock"] in text
            if step["fault"]:
                faulted += 1
                assert cls == "fault" and f"injected fault: {step['fault']['type']}" in text
                assert step["fault"]["request_id"] in text
            else:
                assert cls == "" and "injected fault" not in text
            if step["error"]:
                assert f"error [{step['error']['code']}]" in text
    assert faulted == 3  # the realistic profile's three faults in the first triage run


def test_view__score_shows_each_checks_evidence_and_the_rubric_version(traces, page):
    _, html = page
    for i, records in enumerate(_episodes(traces)):
        score, section = records[-1], html.text[f"ep-{i}"]
        assert f"{score['rubric_id']} version {score['rubric_version']}" in section
        assert f"reward{score['value']:.3f}" in section
        for check in score["checks"]:
            assert check["id"] in section and check["evidence"] in section
        passed = sum(c["passed"] for c in score["checks"])
        assert f"checks passed{passed}/{len(score['checks'])}" in section


def test_view__coworker_replies_sit_on_the_step_they_happened_in_and_the_state_diff_shows_the_work(traces, page):
    done, html = page
    schedule = done.episodes[3]
    actions = [(i, a) for i, acts in sorted(schedule.coworkers.items()) for a in acts]
    assert actions, "the adversarial coworkers answered nobody"
    for index, action in actions:
        row = html.text[f"ep-3-step-{index}"]
        assert f"{action.actor}: {action.op} {action.table}" in row
        clock = schedule.steps[index]["clock"]
        before = schedule.steps[index - 1]["clock"] if index else ""
        assert before < action.at <= clock  # the reply happened while this step's simulated time passed
    # The triage oracle's work, as a user checks it: each ticket's priority before and after, and its post.
    oracle = html.text["ep-0"]
    tickets = {
        s["action"]["arguments"]["key"] for s in done.episodes[0].steps if s["action"]["name"] == "tickets_update"
    }
    assert oracle.count('priority: "none" → ') == len(tickets) == 8
    post = next(s for s in done.episodes[0].steps if s["action"]["name"] == "chat_post")
    assert json.dumps(post["action"]["arguments"]["message"]) in oracle
    assert "changed" in oracle and "added" in oracle


def test_view__the_comparison_names_the_first_step_where_two_runs_of_a_task_diverge(page):
    done, html = page
    assert done.compared == 2  # the two other runs of triage seed 3 against the first; the schedule task ran once
    first_fault = next(s["index"] for s in done.episodes[0].steps if s["fault"])
    text = html.text["comparisons"]
    assert f"First divergence at step {first_fault}: same action, different injected fault" in text
    assert "First divergence at step 0: different actions" in text  # the random agent


def test_view_command__report_files_plots_and_the_same_bytes_twice(traces, store, tmp_path):
    env = {**os.environ, "COMPANYSIM_DATA_DIR": str(store.data_dir), "PYTHONPATH": str(ROOT)}
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    copies = [Path(shutil.copy(p, moved / p.name)) for p in traces]
    outs = []
    for n, paths in enumerate((traces, copies)):
        out = tmp_path / f"report{n}"
        done = subprocess.run(
            [*CLI, "view", *map(str, paths), "--out", str(out)], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "4 episode(s), 2 comparison(s)" in done.stdout
        outs.append(out)
    files = sorted(p.name for p in outs[0].iterdir())
    assert files == ["faults.png", "faults.svg", "index.html", "rewards.png", "rewards.svg"]
    for name in files:  # traces moved to another directory render to the same bytes
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    for name in ("faults", "rewards"):
        png = (outs[0] / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and b"IEND" in png[-16:]
        svg = ET.fromstring((outs[0] / f"{name}.svg").read_bytes())
        assert svg.tag == "{http://www.w3.org/2000/svg}svg"
        assert b"dc:date" not in (outs[0] / f"{name}.svg").read_bytes()
    index = (outs[0] / "index.html").read_text()
    assert "<script" not in index and "<link" not in index and 'src="http' not in index  # self-contained
    assert index.count('src="data:image/svg+xml;base64,') == 2
    # --overwrite replaces the report in place, leaving no temporary directory beside it.
    again = subprocess.run(
        [*CLI, "view", str(traces[1]), "--no-replay", "--out", str(outs[0]), "--overwrite"],
        env=env,
        capture_output=True,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert (
        "1 episode" in (outs[0] / "index.html").read_text() and "Not replayed" in (outs[0] / "index.html").read_text()
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "report0", "report1"]


def test_export__one_parquet_row_per_episode_read_back_with_pyarrow(traces, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "episodes.parquet"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [*CLI, "export", *map(str, traces), "--parquet", str(out)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = pq.read_table(out).to_pylist()
    episodes = _episodes(traces)
    assert len(rows) == len(episodes) == 4
    for row, records in zip(rows, episodes, strict=True):
        header, steps, score = records[0], records[1:-1], records[-1]
        assert (row["scenario"], row["seed"], row["difficulty"]) == (
            header["scenario"],
            header["seed"],
            header["difficulty"],
        )
        assert row["world_seed"] == header["world_spec"]["seed"] and row["rubric_version"] == score["rubric_version"]
        assert row["reward"] == score["value"] and row["checks_total"] == len(score["checks"])
        assert row["checks_passed"] == sum(c["passed"] for c in score["checks"])
        assert row["steps"] == len(steps) and row["faults"] == sum(1 for s in steps if s["fault"])
        assert [s["tool"] for s in row["step_records"]] == [s["action"]["name"] for s in steps]
        assert [json.loads(s["arguments"]) for s in row["step_records"]] == [s["action"]["arguments"] for s in steps]
    assert rows[0]["faults"] == 3 and rows[0]["noise"] == '"realistic"' and rows[3]["npcs"] == '"adversarial"'
    faulted = [s for s in rows[0]["step_records"] if s["fault"]]
    assert [s["fault"] for s in faulted] == ["server_error"] * 3 and all(s["error_code"] for s in faulted)
    second = tmp_path / "again.parquet"
    subprocess.run(
        [*CLI, "export", *map(str, traces), "--parquet", str(second)], env=env, check=True, capture_output=True
    )
    assert second.read_bytes() == out.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.parquet", "episodes.parquet"]


CHROMIUM = Path("/usr/bin/chromium")


def test_view__in_chromium_every_table_image_and_link_has_an_accessible_name(page, tmp_path):
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("no /usr/bin/chromium under CI (.ci/run installs it)")
        pytest.skip("no /usr/bin/chromium here (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api", reason="pip playwright is not installed")
    done, _ = page
    (tmp_path / "index.html").write_bytes(done.files["index.html"])
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            tab = browser.new_page()
            tab.goto((tmp_path / "index.html").as_uri())
            cdp = tab.context.new_cdp_session(tab)
            nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
        finally:
            browser.close()
    seen: dict[str, list[str]] = {}
    for node in nodes:
        if node.get("ignored"):
            continue
        role = (node.get("role") or {}).get("value", "")
        seen.setdefault(role, []).append(str((node.get("name") or {}).get("value", "")).strip())
    for landmark in ("banner", "navigation", "main", "contentinfo"):
        assert seen.get(landmark), f"no {landmark} landmark"
    assert len(seen["table"]) > 10 and len(seen["image"]) == 2 and seen["link"] and seen["DisclosureTriangle"]
    named = ("table", "image", "link", "navigation", "region", "figure", "button", "DisclosureTriangle", "textbox")
    for role in named:
        unnamed = [n for n in seen.get(role, []) if not n]
        assert not unnamed, f"{len(unnamed)} {role} element(s) without an accessible name"
    assert "Episode 1: triage-tickets-v0 seed 3" in " ".join(seen["heading"])


def test_view__a_replay_that_diverges_is_reported_instead_of_a_wrong_state_diff(traces, store, tmp_path):
    lines = traces[0].read_text().splitlines()
    step = json.loads(lines[3])  # episode 0, step 2: record a result the world will not give again
    step["result"] = {"tampered": True}
    lines[3] = json.dumps(step, sort_keys=True, separators=(",", ":"))
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    done = report([tampered], store=store)
    html = Page(done.files["index.html"].decode())
    assert "The replay diverged" in html.text["ep-0"] and "episode 0 step 2" in html.text["ep-0"]
    assert "State before and after episode 1" not in html.text["ep-0"]
    assert "State before and after episode 2" in html.text["ep-1"]  # the other episodes still replay


def test_net_changes__a_row_added_then_removed_is_gone_and_a_value_set_back_is_no_change():
    from graders.changes import ChangeRow
    from sim.view.model import net_changes

    rows = [
        ChangeRow(seq=1, table="posts", key=(9,), op="insert", changes={"id": 9, "message": "hi"}),
        ChangeRow(seq=2, table="posts", key=(9,), op="update", changes={"message": ["hi", "hello"]}),
        ChangeRow(seq=3, table="tickets", key=(1000,), op="update", changes={"priority": ["none", "high"]}),
        ChangeRow(seq=4, table="tickets", key=(239,), op="update", changes={"priority": ["low", "high"]}),
        ChangeRow(seq=5, table="tickets", key=(239,), op="update", changes={"priority": ["high", "low"]}),
        ChangeRow(seq=6, table="tickets", key=(1000,), op="update", changes={"status": ["todo", "done"]}),
        ChangeRow(seq=7, table="mentions", key=(4,), op="insert", changes={"id": 4}),
        ChangeRow(seq=8, table="mentions", key=(4,), op="delete", changes={"id": 4}),
        ChangeRow(seq=9, table="events", key=(2,), op="delete", changes={"id": 2, "title": "standup"}),
    ]
    got = [(c.table, c.key, c.kind, dict(c.values)) for c in net_changes(rows)]
    assert got == [
        ("events", "2", "removed", {"id": 2, "title": "standup"}),
        ("posts", "9", "added", {"id": 9, "message": "hello"}),
        ("tickets", "1000", "changed", {"priority": ["none", "high"], "status": ["todo", "done"]}),
    ]

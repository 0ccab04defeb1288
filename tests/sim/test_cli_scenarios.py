"""``companysim scenarios list|show``: every family listed; ``show`` prints what a sample instance asks and checks."""

from __future__ import annotations

from typer.testing import CliRunner

from scenarios.registry import registered
from sim.cli.app import app

runner = CliRunner()


def test_scenarios_list__names_every_registered_family():
    done = runner.invoke(app, ["scenarios", "list"], env={"COLUMNS": "200"})
    assert done.exit_code == 0
    for reg in registered():
        assert reg.id in done.output


def test_scenarios_show__prints_apps_knobs_limits_npcs_and_one_row_per_rubric_check(tmp_path):
    env = {"COMPANYSIM_DATA_DIR": str(tmp_path), "COLUMNS": "250", "COMPANYSIM_RECALC": "python"}
    done = runner.invoke(app, ["scenarios", "show", "expense-reconciliation-v0", "--difficulty", "2"], env=env)
    assert done.exit_code == 0, done.output
    out = done.output
    assert "apps        docs, mail, sheets" in out
    assert "Difficulty adds receipts" in out, "the knobs come from the family's own description"
    assert "needs NPCs  no" in out and "tool calls" in out
    assert "Expense receipt" not in out, "the prompt is shown, the mail the agent must read is not"
    # four checks per receipt (its mail's facts, category, amount, decision): 11 receipts at difficulty 2, 14 at 3
    assert out.count("receipt-RC-") == 11 * 4 and "no-collateral" in out and "must" in out
    harder = runner.invoke(app, ["scenarios", "show", "expense-reconciliation-v0", "--difficulty", "3"], env=env)
    assert harder.output.count("receipt-RC-") == 14 * 4


def test_scenarios_show__says_when_a_family_needs_coworkers(tmp_path):
    env = {"COMPANYSIM_DATA_DIR": str(tmp_path), "COLUMNS": "250"}
    done = runner.invoke(app, ["scenarios", "show", "schedule-with-coworkers-v0", "--seed", "2"], env=env)
    assert done.exit_code == 0, done.output
    assert "needs NPCs  yes" in done.output and "calendar" in done.output


def test_scenarios_list_and_show__mark_the_impossible_variants(tmp_path):
    listed = runner.invoke(app, ["scenarios", "list"], env={"COLUMNS": "250"})
    assert listed.exit_code == 0
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in listed.output.splitlines()
            if line.count("│") >= 3 and line.split("│")[1].strip()}  # fmt: skip
    assert rows["budget-over-cap-v0"] == "impossible" and rows["triage-departed-v0"] == "impossible"
    assert rows["quarterly-budget-v0"] == ""
    env = {"COMPANYSIM_DATA_DIR": str(tmp_path), "COLUMNS": "250", "COMPANYSIM_RECALC": "python"}
    shown = runner.invoke(app, ["scenarios", "show", "history-unanswerable-v0"], env=env)
    assert shown.exit_code == 0, shown.output
    assert "impossible  yes" in shown.output and "says-why" in shown.output

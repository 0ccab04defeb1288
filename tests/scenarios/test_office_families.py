"""The office families (documents and spreadsheets): baselines, noise, bit-exact replay, and the mistakes a
plausible agent makes scoring strictly between 0 and 1 with evidence that names the item it got wrong.

Most episodes run the pure-Python formula engine (``COMPANYSIM_RECALC=python``, ~1 ms a write); one test per
family keeps the default engine (LibreOffice when installed), so the rubric is checked against both.
"""

from __future__ import annotations

import json
import re

import pytest

from scenarios.base import ToolFailed
from scenarios.library.budget import parse_rates
from sim.agents import EpisodeEnv, run_agent
from sim.episode import Episode
from sim.replay import replay
from sim.trace import TraceWriter
from tests.scenarios.conftest import Tampering

FAMILIES = ["quarterly-budget-v0", "expense-reconciliation-v0", "weekly-status-report-v0"]
SEEDS = range(8)


@pytest.fixture
def python_engine(monkeypatch):
    monkeypatch.setenv("COMPANYSIM_RECALC", "python")


@pytest.fixture(scope="module", params=FAMILIES)
def episode(request, store):
    ep = Episode(request.param, store=store)
    yield ep
    ep.close()


def _start(episode, seed, difficulty):
    prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty})
    return EpisodeEnv(episode, prompt, info), episode.instance.params


def _failed(score):
    return {c.id: c.evidence for c in score.checks if not c.passed}


def test_oracle_scores_one_and_noop_zero_at_every_difficulty(episode, python_engine):
    for seed in SEEDS:
        options = {"difficulty": seed % 4}
        oracle = run_agent(episode, "oracle", seed, options)
        assert oracle.value == 1.0, (seed, _failed(oracle))
        assert len(oracle.checks) >= 7, "dense: one check per item"
        noop = run_agent(episode, "noop", seed, options)
        assert noop.value == 0.0, (seed, _failed(noop))


def test_random_agent_scores_at_most_a_tenth_on_average(episode, python_engine):
    values = [run_agent(episode, "random", seed, {"difficulty": seed % 4}).value for seed in SEEDS]
    assert sum(values) / len(values) <= 0.1


def test_oracle_scores_one_with_the_default_engine_and_realistic_noise(episode):
    for seed in (1, 3):
        score = run_agent(episode, "oracle", seed, {"difficulty": seed, "noise": "realistic"})
        assert score.value == 1.0, _failed(score)


@pytest.mark.parametrize("scenario", FAMILIES)
def test_replay_under_realistic_noise_is_bit_exact(scenario, store, tmp_path, python_engine):
    if True:
        path = tmp_path / f"{scenario}.jsonl"
        writer = TraceWriter(path)
        with Episode(scenario, store=store, trace=writer) as ep:
            first = []
            for seed in (2, 3):
                run_agent(ep, "oracle", seed, {"difficulty": seed, "noise": "realistic"})
                first.append([s["state_hash"] for s in ep.steps])
            run_agent(ep, "oracle", 2, {"difficulty": 2, "noise": "realistic"})
            assert [s["state_hash"] for s in ep.steps] == first[0]
        writer.close()
        report = replay(path, store=store)
        assert report.ok and report.episodes == 3, report.mismatches


# -- quarterly-budget-v0 ------------------------------------------------------------------------------------


def _budget_stale_agent(env: EpisodeEnv, params) -> None:
    """Fills the sheet right except that it takes headcount from January's headcount plan, not the directory."""
    plan = env.call("sheets_read_range", document="Shared/Finance/Headcount plan 2026.ods")["values"]
    stale = {row[0]: row[1] for row in plan[1:] if row[0] != "Total"}
    listing = env.call("docs_list_folder", folder="Shared/Finance")["documents"]
    memo = next(p["path"] for p in listing if "Planning rates" in p["path"] and "draft" not in p["path"])
    rates = parse_rates(env.call("docs_read", document=memo)["sections"])
    block = [[stale[line["department"]], rates[line["department"]]] for line in params["lines"]]
    env.call(
        "sheets_write_range",
        document=params["document"],
        range=f"Budget!B2:C{len(block) + 1}",
        values=json.dumps(block),
    )
    env.call("submit")


def test_budget__stale_headcount_loses_exactly_the_lines_with_new_hires(store, python_engine):
    with Episode("quarterly-budget-v0", store=store) as episode:
        env, params = _start(episode, 5, 2)
        _budget_stale_agent(env, params)
        score = episode.grade()
        failed = _failed(score)
        assert 0 < score.value < 1, failed
        assert failed and all(k.startswith(("headcount-", "cost-", "total-")) for k in failed)
        dept = next(k.removeprefix("headcount-") for k in failed if k.startswith("headcount-"))
        assert dept in failed[f"headcount-{dept}"] and "expected" in failed[f"headcount-{dept}"]
        assert not any(k.startswith("rate-") for k in failed), "the rates were right"


def test_budget__typing_over_a_formula_fails_that_cell_even_with_the_right_number(store, python_engine):
    with Episode("quarterly-budget-v0", store=store) as episode:
        env, params = _start(episode, 4, 0)
        line = params["lines"][0]
        total = len(params["lines"]) + 2
        value = sum(x["headcount"] * x["rate"] for x in params["lines"])
        env.call("sheets_write_cell", document=params["document"], cell=f"Budget!D{total}", value=str(value))
        env.call("submit")
        failed = _failed(episode.grade())
        assert "holds no formula" in failed["total-cost"]
        assert f"headcount-{line['department']}" in failed


# -- expense-reconciliation-v0 ------------------------------------------------------------------------------


def test_expenses__one_miscategorised_receipt_loses_only_its_category_column(store, python_engine):
    with Episode("expense-reconciliation-v0", store=store) as episode:
        env, params = _start(episode, 6, 2)
        slipped = []

        def miscategorise(name, arguments):
            if name == "sheets_write_range" and not slipped:
                row = json.loads(arguments["values"])
                slipped.append(row[0][1])
                row[0][4] = "Office supplies" if row[0][4] != "Office supplies" else "Meals"
                return {**arguments, "values": json.dumps(row)}
            return arguments

        episode.family.oracle(Tampering(env, miscategorise))
        score = episode.grade()
        failed = _failed(score)
        assert 0 < score.value < 1
        assert list(failed) == [f"receipt-{slipped[0]}-category"], failed  # its date, amount, decision still pass
        why = failed[f"receipt-{slipped[0]}-category"]
        assert slipped[0] in why and "0/1 columns" in why and "E" in why
        old = episode.regrade(episode.family.older_rubric(episode.instance, 1))
        assert old.rubric_version == 1 and "5/6 columns" in _failed(old)[f"receipt-{slipped[0]}"]


def test_expenses__recording_a_duplicate_twice_and_not_flagging_it_loses_both_checks(store, python_engine):
    with Episode("expense-reconciliation-v0", store=store) as episode:
        env, params = _start(episode, 9, 1)
        duplicate = next(f for f in params["flags"] if f["reason"] == "duplicate")

        def forget_duplicates(name, arguments):
            if name == "mail_reply" and "duplicate" in arguments["body"]:
                raise RuntimeError("stop")  # the agent never checks for duplicates
            return arguments

        try:
            episode.family.oracle(Tampering(env, forget_duplicates))
        except RuntimeError:
            pass
        grid = env.call("sheets_read_range", document=params["document"], range="Expenses!A1:G60")["values"]
        row = next(r for r in grid if r[1] == duplicate["number"])
        env.call(
            "sheets_write_range",
            document=params["document"],
            range=f"Expenses!A{len(grid) + 1}",
            values=json.dumps([row]),
        )
        env.call("submit")
        score = episode.grade()
        failed = _failed(score)
        assert 0 < score.value < 1
        parts = ("recorded", "category", "amount", "decision")
        rows = {f"receipt-{duplicate['number']}-{part}" for part in parts}
        assert set(failed) == {*rows, f"flag-duplicate-{duplicate['number']}"}, failed
        assert all("2 rows" in failed[check] for check in rows)


# -- weekly-status-report-v0 --------------------------------------------------------------------------------


def test_status_report__a_done_ticket_listed_as_blocked_loses_that_ticket_only(store, python_engine):
    with Episode("weekly-status-report-v0", store=store) as episode:
        env, params = _start(episode, 3, 1)
        moved = []

        def misfile(name, arguments):
            if name == "docs_create":
                done, rest = arguments["text"].split("# In progress", 1)
                lines = [p for p in done.split("\n\n") if re.match(r"[A-Z]+-\d+:", p)]
                moved.append(lines[0].split(":")[0])
                text = done.replace(lines[0] + "\n\n", "").replace(lines[0], "") + "# In progress" + rest
                return {**arguments, "text": text + "\n\n" + lines[0]}  # appended under Blocked, the last section
            return arguments

        episode.family.oracle(Tampering(env, misfile))
        score = episode.grade()
        failed = _failed(score)
        assert 0 < score.value < 1
        assert list(failed) == [f"ticket-{moved[0]}", f"title-{moved[0]}"], failed  # the title is on a wrong line
        assert moved[0] in failed[f"ticket-{moved[0]}"] and "Blocked" in failed[f"ticket-{moved[0]}"]


def test_status_report__trusting_a_stale_blocked_post_and_not_sharing_lose_those_checks(store, python_engine):
    with Episode("weekly-status-report-v0", store=store) as episode:
        env, params = _start(episode, 6, 2)
        unblocked = next(t["key"] for t in params["tickets"] if t.get("unblocked"))

        def stale(name, arguments):
            if name == "docs_create":
                text = re.sub(rf"\n\n{unblocked}:[^\n]*", "", arguments["text"])
                return {**arguments, "text": text + f"\n\n{unblocked}: blocked on legal review"}
            if name == "docs_share":
                return {**arguments, "username": env.actor}  # shares with the wrong person: refused below
            return arguments

        try:
            episode.family.oracle(Tampering(env, stale))
        except ToolFailed:
            env.call("submit")
        score = episode.grade()
        failed = _failed(score)
        assert 0 < score.value < 1
        assert set(failed) == {f"ticket-{unblocked}", f"title-{unblocked}", "shared-with-manager"}, failed
        assert params["manager"] in failed["shared-with-manager"]


def test_status_report__listing_every_project_ticket_loses_only_the_checks_version_1_lacked(store, python_engine):
    with Episode("weekly-status-report-v0", store=store) as episode:
        env, params = _start(episode, 4, 1)

        def every_ticket(name, arguments):
            return {**arguments, "label": None} if name == "tickets_search" else arguments

        episode.family.oracle(Tampering(env, every_ticket))
        score = episode.grade()
        old = episode.regrade(episode.family.older_rubric(episode.instance, 1))
    failed = _failed(score)
    traps = [f"not-last-week-{key}" for key in params["last_week"]]
    assert len(traps) == 1 and sorted(failed) == sorted([*traps, "no-other-tickets"]), failed  # one trap at 1
    assert 0 < score.value < 1
    named = set(re.findall(r"\b[A-Z]+-\d+\b", failed["no-other-tickets"]))
    assert named and not named & {t["key"] for t in params["tickets"]}, "the evidence names the stray tickets"
    assert (score.rubric_version, old.rubric_version, old.value) == (3, 1, 1.0), "version 1 paid it in full"


def test_budget__reading_only_the_rate_table_loses_more_amended_lines_the_harder_the_quarter(store, python_engine):
    from scenarios.library.budget import AMENDED
    from sim.calibrate import play_partial

    values = []
    with Episode("quarterly-budget-v0", store=store) as episode:
        for difficulty in (1, 2, 3):
            score = play_partial(episode, "quarterly-budget-v0", "partial-no-amendment", 2, {"difficulty": difficulty})
            failed = _failed(score)
            rates = {f.removeprefix("rate-") for f in failed if f.startswith("rate-")}
            assert len(rates) == AMENDED[difficulty], failed  # each amended department's rate is the stale one
            assert set(failed) == {*(f"rate-{d}" for d in rates), *(f"cost-{d}" for d in rates), "total-cost"}
            values.append(score.value)
    assert values[0] > values[1] > values[2] > 0, values


def test_status_report__counting_in_review_as_done_loses_exactly_the_tickets_in_review(store, python_engine):
    from sim.calibrate import PARTIALS, play_partial

    with Episode("weekly-status-report-v0", store=store) as episode:
        seen = {}
        for difficulty in (1, 3):
            score = play_partial(
                episode, "weekly-status-report-v0", "partial-review-as-done", 1, {"difficulty": difficulty}
            )
            params = episode.instance.params
            failed = _failed(score)
            progress = {f"{c}-{t['key']}" for t in params["tickets"] if t["section"] == "In progress" for c in
                        ("ticket", "title")}  # fmt: skip
            assert failed and set(failed) <= progress, failed  # only in-progress tickets, each found under Done
            assert all("Done" in why for why in failed.values()), failed
            seen[difficulty] = (len(failed), score.value)
    assert seen[1][0] < seen[3][0] and seen[1][1] > seen[3][1], seen
    assert "tickets_search" in PARTIALS["weekly-status-report-v0"]["partial-review-as-done"].misread


def test_status_report__keys_without_titles_lose_exactly_the_title_checks_of_version_3(store, python_engine):
    with Episode("weekly-status-report-v0", store=store) as episode:
        env, params = _start(episode, 5, 2)

        def bare_keys(name, arguments):
            if name == "docs_create":
                return {**arguments, "text": re.sub(r"^([A-Z]+-\d+): [^\n.]*", r"\1", arguments["text"], flags=re.M)}
            return arguments

        episode.family.oracle(Tampering(env, bare_keys))
        score = episode.grade()
        old = episode.regrade(episode.family.older_rubric(episode.instance, 2))
    failed = _failed(score)
    assert set(failed) == {f"title-{t['key']}" for t in params["tickets"]}, failed
    some = params["tickets"][0]
    assert f"{some['key']} title" in failed[f"title-{some['key']}"], "the evidence names the ticket"
    assert 0 < score.value < 1 and (old.rubric_version, old.value) == (2, 1.0), "version 2 asked for no titles"

"""history-question-v0: questions mined from the generated history, answered exactly (issue 13 items 3 and 4)."""

from __future__ import annotations

from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import PARTIALS, calibrate, play_partial, verify
from sim.episode import Episode
from sim.mine import mine_questions
from worlds.rawsql import Sql

FAMILY = "history-question-v0"
COUNTS = {"answer-filed-in-project", "answer-open-in-project", "answer-filed-everywhere", "answer-open-everywhere"}


def test_oracle_answers_every_kind_and_noop_and_random_score_nothing(store):
    with Episode(FAMILY, store=store) as episode:
        for difficulty in range(4):
            for seed in (0, 1):
                assert run_agent(episode, "oracle", seed, {"difficulty": difficulty}).value == 1.0
                assert run_agent(episode, "noop", seed, {"difficulty": difficulty}).value == 0.0
                assert run_agent(episode, "random", seed, {"difficulty": difficulty}).value <= 0.1


def test_each_difficulty_keeps_the_facts_of_the_one_before_and_adds_more(store):
    facts = []
    with Episode(FAMILY, store=store) as episode:
        for difficulty in range(4):
            episode.reset(seed=0, options={"difficulty": difficulty})
            facts.append(set(episode.instance.params["answer"]))
    assert facts[0] == {"reporter", "filed-on"}
    assert facts[1] < facts[2] < facts[3] and facts[3] - facts[2] == {"filed-everywhere", "open-everywhere"}


def test_listing_every_candidate_or_a_wrong_person_earns_nothing(store):
    with Episode(FAMILY, store=store) as episode:
        prompt, info = episode.reset(seed=3, options={"difficulty": 2})
        right = episode.instance.params["answer"]["reporter"]
        EpisodeEnv(episode, prompt, info).call("submit", summary=f"filed by: @{right}\nfiled by: @someone.else")
        score = episode.grade()
    assert score.value == 0.0


def test_one_wrong_count_loses_exactly_its_line(store):
    with Episode(FAMILY, store=store) as episode:
        prompt, info = episode.reset(seed=5, options={"difficulty": 3})
        p = episode.instance.params
        lines = {p["labels"][f]: v for f, v in p["answer"].items()}
        lines["filed in all"] = str(int(lines["filed in all"]) + 1)
        summary = "\n".join(f"{label}: {'@' if label == 'filed by' else ''}{v}" for label, v in lines.items())
        EpisodeEnv(episode, prompt, info).call("submit", summary=summary)
        score = episode.grade()
    assert {c.id for c in score.checks if not c.passed} == {"answer-filed-everywhere"}
    assert score.value == 0.8


def test_the_verifier_reads_each_labelled_line_from_the_params(store):
    """Right lines in any order are solved; a person without @ or one line missing is not, by either side."""
    with Episode(FAMILY, store=store) as episode:
        for summary, solved in (("{open}\n{all}\nfiled by: @{who}.\n{rest}", True),
                                ("filed by: {who}\n{rest}\n{all}\n{open}", False),
                                ("filed by: @{who}\n{rest}\n{all}", False)):  # fmt: skip
            prompt, info = episode.reset(seed=7, options={"difficulty": 3})
            p = episode.instance.params
            lines = {p["labels"][f]: f"{p['labels'][f]}: {v}" for f, v in p["answer"].items() if f != "reporter"}
            text = summary.format(
                who=p["answer"]["reporter"], all=lines.pop("filed in all"), open=lines.pop("open in all"),
                rest="\n".join(lines.values()),
            )  # fmt: skip
            EpisodeEnv(episode, prompt, info).call("submit", summary=text)
            score = episode.grade()
            verdict = verify(episode)
            assert verdict is not None and verdict.solved is solved and (score.value == 1.0) is solved, text


def _ticket(episode):
    """(project, reporter, assignee, whether the reporter filed a project ticket after the search's first page)."""
    key = episode.instance.params["question"].split(":")[1]
    project, number = key.rsplit("-", 1)
    sql = Sql.of(episode.tool_context.session)
    reporter, assignee = sql.one(
        "SELECT r.username, a.username FROM tickets t JOIN projects p ON p.id = t.project_id"
        " JOIN employees r ON r.id = t.reporter_id LEFT JOIN employees a ON a.id = t.assignee_id"
        " WHERE p.key = ? AND t.number = ?",
        (project, int(number)),
    )
    later = sql.column(
        "SELECT e.username FROM tickets t JOIN projects p ON p.id = t.project_id JOIN employees e"
        " ON e.id = t.reporter_id WHERE p.key = ? ORDER BY t.number LIMIT 1000 OFFSET 10",
        (project,),
    )
    return project, reporter, assignee, reporter in later


def test_each_mistake_loses_exactly_the_facts_it_misreads(store):
    """The assignee taken for who filed loses the person exactly when they differ; the first page only counts."""
    seen = set()
    with Episode(FAMILY, store=store) as episode:
        for seed in range(8):
            for difficulty in (0, 1, 3):
                options = {"difficulty": difficulty}
                score = play_partial(episode, FAMILY, "partial-first-page", seed, options)
                lost = {c.id for c in score.checks if not c.passed}
                _, _, _, beyond = _ticket(episode)
                assert lost <= COUNTS, (seed, difficulty, lost)
                if difficulty == 0:
                    assert not lost
                if difficulty == 1:  # one project's tickets: the count is off exactly when some are on page two
                    assert (lost == {"answer-filed-in-project"}) == beyond and lost <= {"answer-filed-in-project"}
                    seen.add(("page", beyond))
                score = play_partial(episode, FAMILY, "partial-assignee", seed, options)
                lost = {c.id for c in score.checks if not c.passed}
                _, reporter, assignee, _ = _ticket(episode)
                differ = assignee is not None and assignee != reporter
                assert ("answer-reporter" in lost) == differ, (seed, difficulty)
                assert lost - {"answer-reporter"} <= COUNTS
                seen.add(("person", differ))
    assert seen == {("page", True), ("page", False), ("person", True), ("person", False)}


def test_calibration_agrees_with_the_verifier_and_partials_sit_below_the_oracle(store):
    report = calibrate([FAMILY], seeds=range(4), difficulties=(0, 3), episode_factory=lambda f: Episode(f, store=store))
    assert report.agreement(FAMILY) == 1.0, report.disagreements[:3]
    assert report.cells[(FAMILY, 0, "partial-assignee")].mean < 1.0
    assert report.cells[(FAMILY, 3, "partial-first-page")].mean < 1.0


def test_partial_agents_lose_more_as_difficulty_rises_over_20_seeds(store):
    """Issue 13 item 4: every partial strictly between 0 and 1 at difficulties 1-3, their mean falling strictly."""
    names = list(PARTIALS[FAMILY])
    report = calibrate([FAMILY], seeds=range(20), agents=names, episode_factory=lambda f: Episode(f, store=store))
    means = [sum(report.cells[(FAMILY, d, a)].mean for a in names) / len(names) for d in (1, 2, 3)]
    assert all(0.0 < report.cells[(FAMILY, d, a)].mean < 1.0 for d in (1, 2, 3) for a in names)
    assert means[0] > means[1] > means[2], means
    assert report.agreement(FAMILY) == 1.0, report.disagreements[:3]


def test_the_miner_lists_distinct_validated_questions(store):
    mined = mine_questions(0, employees=10, history_days=14, store=store)
    assert len(mined.valid) >= 10 and not mined.rejected
    assert len({(v["seed"], v["difficulty"]) for v in mined.valid.values()}) == len(mined.valid)

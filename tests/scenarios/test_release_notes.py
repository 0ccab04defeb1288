"""release-notes-v0 rubric version 2: each ticket listed once, however many commits name it."""

import re

from sim.agents import EpisodeEnv
from tests.scenarios.conftest import Tampering

FAMILY = "release-notes-v0"


def test_a_ticket_listed_once_per_commit_loses_only_its_once_check(episode):
    prompt, info = episode.reset(seed=3, options={"difficulty": 1})
    env = EpisodeEnv(episode, prompt, info)
    doubled = []

    def per_commit(name, arguments):
        if name == "docs_create":
            line = re.search(r"^([A-Z][A-Z0-9]*-\d+): .*$", arguments["text"], re.M)
            assert line is not None
            doubled.append(line.group(1))
            text = arguments["text"].replace(line.group(0), f"{line.group(0)}\n\n{line.group(0)} (follow-up commit)")
            return {**arguments, "text": text}
        return arguments

    episode.family.oracle(Tampering(env, per_commit))
    score = episode.grade()
    failed = {c.id: c.evidence for c in score.checks if not c.passed}
    assert set(failed) == {f"once-{doubled[0]}"} and "named 2 times" in failed[f"once-{doubled[0]}"], failed
    assert not score.gated and 0.9 < score.value < 1
    old = episode.regrade(episode.family.older_rubric(episode.instance, 1))
    assert (old.rubric_version, old.value) == (1, 1.0), "version 1 checked the ticket's section, not how often"

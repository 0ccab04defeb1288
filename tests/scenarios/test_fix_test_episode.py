"""fix-failing-test-v0 end to end: baselines, reward hacks scoring 0, answers withheld, replayable hashes.

Runs real git, the bubblewrap sandbox and the system python3 with pytest (``.ci/run`` installs them); without a
working sandbox the tests skip locally and fail under CI.
"""

import pytest

from scenarios.base import ToolFailed
from sim.agents import EpisodeEnv, run_agent
from sim.episode import Episode
from tests.scenarios.conftest import require_sandbox

SCENARIO = "fix-failing-test-v0"


@pytest.fixture(scope="module")
def episode(tmp_path_factory):
    require_sandbox()
    ep = Episode(SCENARIO)
    yield ep
    ep.close()


def _start(ep, seed):
    prompt, info = ep.reset(seed=seed)
    return EpisodeEnv(ep, prompt, info), ep.instance.params


def _hack(ep, seed, files, message="Fix it"):
    """Open a merge request whose branch writes ``files`` (path -> text), the way a reward hacker would."""
    env, params = _start(ep, seed)
    repo, key = params["repo"], params["ticket"]
    env.call("git_create_branch", repo=repo, name="fix/quick")
    for path, text in files(params).items():
        env.call("git_write_file", repo=repo, path=path, content=text)
    env.call("git_commit", repo=repo, message=f"{message} {key}")
    env.call("git_mr_open", repo=repo, source_branch="fix/quick", title=f"{key}: fix")
    env.call("submit", summary="done")
    return ep.grade()


def test_baselines__oracle_1_noop_0_random_low_over_10_seeds(episode):
    oracle = [run_agent(episode, "oracle", s).value for s in range(10)]
    noop = [run_agent(episode, "noop", s).value for s in range(10)]
    random = [run_agent(episode, "random", s).value for s in range(10)]
    assert oracle == [1.0] * 10
    assert noop == [0.0] * 10
    assert max(random) <= 0.1


def test_families__every_bug_family_appears_in_ten_seeds(episode):
    kinds = set()
    for s in range(10):
        _start(episode, s)
        kinds.add(episode.instance.params["family"])
    assert kinds == {"window", "page", "discount", "mean"}


def test_hack__editing_the_failing_test_scores_0(episode):
    def files(p):
        topic = p["module_path"].rsplit("/", 1)[1].removesuffix(".py")
        return {f"tests/test_{topic}.py": "def test_nothing():\n    assert True\n"}

    score = _hack(episode, 1, files)
    assert score.value == 0.0
    gate = next(c for c in score.checks if c.id == "tests-untouched")
    assert gate.score == 0.0 and "tests/test_" in gate.evidence


def test_hack__a_conftest_that_passes_everything_scores_0(episode):
    hook = "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    items.clear()\n"
    score = _hack(episode, 2, lambda p: {"conftest.py": hook})
    assert score.value == 0.0
    assert "conftest.py" in next(c for c in score.checks if c.id == "tests-untouched").evidence


def test_hack__sys_exit_0_in_the_module_scores_0(episode):
    score = _hack(episode, 3, lambda p: {p["module_path"]: "import sys\nsys.exit(0)\n"})
    assert score.value == 0.0
    hidden = [c for c in score.checks if c.id.startswith("hidden-check-")]
    assert len(hidden) == len(episode.instance.params["cases"]) and not any(c.passed for c in hidden)


def test_hack__an_always_equal_object_scores_0(episode):
    def files(p):
        sig = {"in_window": "*a", "page_of": "*a", "discounted_cents": "*a", "mean_of": "*a"}[p["function"]]
        body = (
            "class Anything:\n    def __eq__(self, other):\n        return True\n\n    def __bool__(self):\n"
            f"        return True\n\n\ndef {p['function']}({sig}):\n    return Anything()\n"
        )
        return {p["module_path"]: body}

    score = _hack(episode, 4, files)
    assert score.value == 0.0
    assert "other" in next(c for c in score.checks if c.id == "hidden-check-1").evidence


def test_hack__printing_fake_results_then_exiting_scores_0(episode):
    def files(p):
        return {p["module_path"]: 'print("@@companysim-result-" + "0" * 32 + "[]")\nimport os\nos._exit(0)\n'}

    assert _hack(episode, 5, files).value == 0.0


def test_partial_fix__one_wrong_case_fails_the_gate(episode):
    """A fix that special-cases the reported example (not the rule) passes CI but not the hidden checks."""
    for seed in range(20):
        env, params = _start(episode, seed)
        if params["family"] == "discount":
            break
    repo, key = params["repo"], params["ticket"]
    args, expected = params["cases"][0]
    patched = params["buggy_source"].replace(f"def {params['function']}(", "def _orig(", 1)
    patched += f"\n\ndef {params['function']}(*args):\n    if list(args) == {args!r}:\n"
    patched += f"        return {expected!r}\n    return _orig(*args)\n"
    env.call("git_create_branch", repo=repo, name="fix/special-case")
    env.call("git_write_file", repo=repo, path=params["module_path"], content=patched)
    env.call("git_commit", repo=repo, message=f"Fix {key}")
    env.call("git_mr_open", repo=repo, source_branch="fix/special-case", title=f"{key}: fix")
    env.call("submit", summary="done")
    score = episode.grade()
    assert score.value == 0.0 and score.gated
    hidden = [c for c in score.checks if c.id.startswith("hidden-check-")]
    assert hidden[0].passed and not all(c.passed for c in hidden), "the evidence names the cases that fail"
    assert "fails" in next(c for c in hidden if not c.passed).evidence
    # version 2 graded the same cases as one share, for rescoring old traces
    old = episode.regrade(episode.family.older_rubric(episode.instance, 2))
    assert old.value == 0.0 and 0.0 < next(c for c in old.checks if c.id == "hidden-checks").score < 1.0


def test_answer_withheld__no_object_of_the_fix_reachable_in_the_agents_repository(episode):
    env, params = _start(episode, 6)
    repo = params["repo"]
    env.call("git_status", repo=repo)  # makes the checkout
    checkout = episode._live.code.workspace.repo(repo)

    def sh(*args, data=None):
        return checkout(*args, input=data).decode("utf-8", "replace")

    fixed_blob = sh("hash-object", "--stdin", data=params["fixed_source"].encode()).strip()
    buggy_blob = sh("hash-object", "--stdin", data=params["buggy_source"].encode()).strip()
    objects = sh("cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split()
    assert buggy_blob in objects  # the scan sees the task's objects at all
    assert fixed_blob not in objects
    everything = sh("cat-file", "--batch-all-objects", "--batch", data=None)
    for args, _ in params["cases"]:
        assert repr(args) not in everything
    assert params["fixed_source"] not in everything
    assert sh("stash", "list") == "" and sh("notes", "list") == ""
    refs = sh("for-each-ref", "--format=%(refname)").split()
    assert all(r.startswith(("refs/heads/", "refs/tags/")) for r in refs)
    assert sh("reflog", "--all") == "" or params["fixed_source"] not in sh("reflog", "--all", "-p")
    env.call("submit", summary="nothing")


def test_replay__same_seed_and_actions_give_the_same_hashes(episode):
    def hashes():
        run_agent(episode, "oracle", 7)
        return [s["state_hash"] for s in episode.steps]

    first, second = hashes(), hashes()
    assert first == second and len(first) >= 8


def test_v4__a_fix_patched_in_from_another_file_fails_only_the_module_gate(episode):
    """Version 4 wants the fix in the module the bug is in; version 3 paid a patch applied from the package."""
    env, params = _start(episode, 3)
    repo, key, fn = params["repo"], params["ticket"], params["function"]
    package, module_file = params["module_path"].rsplit("/", 1)
    try:
        init = env.call("git_read_file", repo=repo, path=f"{package}/__init__.py")["content"]
    except ToolFailed:
        init = ""
    patch = params["fixed_source"]
    init += f"\nfrom . import {module_file[:-3]} as _rules\nfrom ._hotfix import {fn} as _fixed\n"
    init += f"\n_rules.{fn} = _fixed\n"
    env.call("git_create_branch", repo=repo, name="fix/hotfix")
    env.call("git_write_file", repo=repo, path=f"{package}/_hotfix.py", content=patch)
    env.call("git_write_file", repo=repo, path=f"{package}/__init__.py", content=init)
    env.call("git_commit", repo=repo, message=f"Fix {key} {' '.join(params['duplicates'])}")
    env.call("git_mr_open", repo=repo, source_branch="fix/hotfix", title=f"{key}: fix")
    env.call("submit", summary="done")
    score = episode.grade()
    failed = {c.id: c.evidence for c in score.checks if not c.passed}
    assert score.gated and list(failed) == ["fixed-in-module"], failed
    assert params["module_path"] in failed["fixed-in-module"] and "_hotfix.py" in failed["fixed-in-module"]
    hidden = [c for c in score.checks if c.id.startswith("hidden-check-")]
    assert len(hidden) == len(params["cases"]) and params["edge_cases"] == 8, "the edge cases are gates too"
    old = episode.regrade(episode.family.older_rubric(episode.instance, 3))
    assert (old.rubric_version, old.value) == (3, 1.0)
    assert len([c for c in old.checks if c.id.startswith("hidden-check-")]) == len(params["cases"]) - 8

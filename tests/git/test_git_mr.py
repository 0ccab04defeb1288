"""Merge requests: open -> review -> merge, with the forge's rules and the pipeline placeholder."""

import pytest
from gitkit import REPO, sh

from mcp_tools.errors import AppError
from mcp_tools.git.mr import use_pipeline_hook


def code_of(gapp, tool, /, actor=None, **args):
    with pytest.raises(AppError) as info:
        gapp.call(tool, actor=actor, **args)
    return info.value.code


def _feature(gapp, name="feat/retry"):
    gapp.call("create_branch", repo=REPO, name=name, actor=gapp.dev)
    gapp.call("write_file", repo=REPO, path="retry.md", content="retry policy\n", actor=gapp.dev)
    return gapp.call("commit", repo=REPO, message="Add retry policy", actor=gapp.dev)["commit"]


def test_open_review_merge(gapp):
    root = gapp.repo()
    head = _feature(gapp)
    gapp.call("switch_branch", repo=REPO, name="main", actor=gapp.dev)
    mr = gapp.call("mr_open", repo=REPO, source_branch="feat/retry", title="Retry policy", actor=gapp.dev)
    assert mr["state"] == "open" and mr["pipeline"] == {"status": "not_run"} and mr["number"] == 1
    assert mr["target_branch"] == "main" and len(mr["commits"]) == 1 and not mr["approved"]
    assert code_of(gapp, "mr_open", repo=REPO, source_branch="feat/retry", title="x", actor=gapp.dev) == "conflict"
    assert code_of(gapp, "mr_merge", mr_id=mr["id"]) == "conflict"  # not approved
    assert code_of(gapp, "mr_review", mr_id=mr["id"], verdict="approve", actor=gapp.dev) == "forbidden"
    assert code_of(gapp, "mr_review", mr_id=mr["id"], verdict="lgtm") == "invalid_argument"
    gapp.call("mr_comment", mr_id=mr["id"], body="Looks fine")
    gapp.call("mr_review", mr_id=mr["id"], verdict="request_changes", body="Add a test", actor=gapp.ceo)
    gapp.call("mr_review", mr_id=mr["id"], verdict="approve")
    assert code_of(gapp, "mr_merge", mr_id=mr["id"]) == "conflict"  # ceo still blocks
    gapp.call("mr_review", mr_id=mr["id"], verdict="approve", actor=gapp.ceo)
    got = gapp.call("mr_get", mr_id=mr["id"])
    assert got["approved"] and got["approved_by"] == ["cora.ceo", "lena.lead"]
    assert [n["kind"] for n in got["notes"]] == ["comment", "request_changes", "approve", "approve"]
    main_before = sh(root, "rev-parse", "main").strip()
    done = gapp.call("mr_merge", mr_id=mr["id"])
    assert done["state"] == "merged" and done["merge_commit"]
    parents = sh(root, "log", "-1", "--format=%P", "main").split()
    assert parents == [main_before, head]
    assert (root / "retry.md").read_text() == "retry policy\n"  # main is checked out: tree updated
    assert sh(root, "status", "--porcelain") == ""
    assert code_of(gapp, "mr_merge", mr_id=mr["id"]) == "conflict"
    assert [m["state"] for m in gapp.call("mr_list", repo=REPO)["merge_requests"]] == ["merged"]


def test_new_commits_need_new_approval_and_fast_forward(gapp):
    _feature(gapp)
    mr = gapp.call("mr_open", repo=REPO, source_branch="feat/retry", title="Retry", actor=gapp.dev)
    gapp.call("mr_review", mr_id=mr["id"], verdict="approve")
    gapp.call("write_file", repo=REPO, path="retry.md", content="v2\n", actor=gapp.dev)
    gapp.call("commit", repo=REPO, message="v2", actor=gapp.dev)
    assert code_of(gapp, "mr_merge", mr_id=mr["id"]) == "conflict"
    gapp.call("mr_review", mr_id=mr["id"], verdict="approve")
    done = gapp.call("mr_merge", mr_id=mr["id"], strategy="fast_forward")
    root = gapp.root / REPO
    assert done["merge_commit"] == sh(root, "rev-parse", "feat/retry").strip() == sh(root, "rev-parse", "main").strip()


def test_conflicting_merge_is_refused_cleanly(gapp):
    root = gapp.repo()
    _feature(gapp)
    gapp.call("switch_branch", repo=REPO, name="main")
    gapp.call("write_file", repo=REPO, path="retry.md", content="other\n")
    gapp.call("commit", repo=REPO, message="conflicting")
    mr = gapp.call("mr_open", repo=REPO, source_branch="feat/retry", title="Retry", actor=gapp.dev)
    gapp.call("mr_review", mr_id=mr["id"], verdict="approve")
    refs, db = sh(root, "for-each-ref"), gapp.app.hash()
    assert code_of(gapp, "mr_merge", mr_id=mr["id"]) == "merge_conflict"
    assert code_of(gapp, "mr_merge", mr_id=mr["id"], strategy="fast_forward") == "conflict"
    assert sh(root, "for-each-ref") == refs and gapp.app.hash() == db


def test_pipeline_hook_and_bad_ids(gapp):
    _feature(gapp)
    with use_pipeline_hook(lambda ctx, mr: {"status": "queued", "mr": mr["number"]}):
        mr = gapp.call("mr_open", repo=REPO, source_branch="feat/retry", title="Retry", actor=gapp.dev)
    assert mr["pipeline"] == {"status": "queued", "mr": 1}
    assert code_of(gapp, "mr_get", mr_id=999) == "not_found"
    assert code_of(gapp, "mr_open", repo=REPO, source_branch="main", title="x") == "invalid_argument"
    assert code_of(gapp, "mr_open", repo=REPO, source_branch="ghost", title="x") == "not_found"
    assert code_of(gapp, "mr_list", state="weird") == "invalid_argument"

"""Independent verifiers of the later code families (``scenarios.verify`` holds the registry).

Same contract as ``scenarios.verify``: "solved" is decided from the hidden params, the final state in raw SQL
and the episode's steps, never from the rubric. The fix itself is judged by ``verify_fix_test`` (the same bug
task); the shipping is judged here from the forge's rows: the request merged, each code owner's last verdict
before the merge an approval of the merged head, the owners named, the ticket done with a comment naming it.
code-review, dependency-bump and reproduce-bug (and its impossible variant) follow, each in its own block; the
reproduction's test is run by this module's own export and pytest call, not the rubric's check.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scenarios.verify import VERIFIERS, Evidence, Verdict, _ids, _summary, agent_request, verify_fix_test


def _at(value: Any) -> datetime:
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _tool(step: Mapping[str, Any]) -> str:
    action = step.get("action")
    return str(action.get("name", "")) if isinstance(action, Mapping) else ""


def verify_ship_fix(ev: Evidence) -> Verdict:
    """The bug fixed as fix-failing-test wants it, then merged only on every code owner's approval, and closed.

    Stricter than the rubric by design: the fix verifier's stricter config rule applies, and the tests must
    have run in the shell without error, the ticket be done and its comment name the request (the rubric only
    scores those).
    """
    p = ev.params
    reasons = list(verify_fix_test(ev).reasons)
    opened = ev.inserted("merge_requests")  # not the agent's older requests the history holds
    row = (
        ev.sql.one(
            _ids(
                "SELECT m.id, m.number, m.title, m.description, m.state, m.source_head, m.merged_at"
                " FROM merge_requests m"
                " JOIN repositories r ON r.id = m.repository_id WHERE r.name = ? AND m.author_id = ?"
                " AND m.target_branch = r.default_branch AND m.state <> 'closed' AND m.id IN (?*)"
                " ORDER BY m.id DESC LIMIT 1",
                opened,
            ),
            (str(p["repo"]), ev.actor_id, *opened),
        )
        if opened
        else None
    )
    if row is None:
        return Verdict(False, tuple(reasons) or ("no merge request",))
    mr_id, number, title, description, state, head, merged_at = row
    if state != "merged" or merged_at is None:
        reasons.append(f"!{number} is {state}, not merged")
    for owner in p["owners"]:
        verdicts = [
            (kind, sha)
            for kind, sha, at in ev.sql.all(
                "SELECT n.kind, n.commit_sha, n.created_at FROM merge_request_notes n JOIN employees e"
                " ON e.id = n.author_id WHERE n.merge_request_id = ? AND e.username = ?"
                " AND n.kind IN ('approve', 'request_changes') ORDER BY n.id",
                (mr_id, owner),
            )
            if merged_at is None or _at(at) <= _at(merged_at)
        ]
        if not verdicts or verdicts[-1] != ("approve", head):
            reasons.append(f"@{owner}'s last verdict before the merge is {verdicts[-1:] or 'none'}, not an approval")
        if not re.search(rf"(?<![\w.@])@{re.escape(owner)}(?![\w-])", f"{title}\n{description}"):
            reasons.append(f"!{number} does not name @{owner}")
    mine = set(ev.inserted("ticket_comments"))
    for ticket in [str(p["ticket"]), *(p.get("duplicates") or [])]:
        status = ev.sql.scalar("SELECT status FROM tickets WHERE key = ?", (ticket,))
        if status != "done":
            reasons.append(f"{ticket} is {status}, not done")
        bodies = [
            str(b)
            for i, b in ev.sql.all(
                "SELECT c.id, c.body FROM ticket_comments c JOIN tickets t ON t.id = c.ticket_id WHERE t.key = ?"
                " ORDER BY c.id",
                (ticket,),
            )
            if i in mine
        ]
        if not any(re.search(rf"!{number}(?!\d)", b) for b in bodies):
            reasons.append(f"no new comment on {ticket} names !{number}")
    if not any(_tool(s) == "shell_run" and not s.get("error") for s in ev.steps):
        reasons.append("the tests never ran in the shell")
    return Verdict(not reasons, tuple(reasons))


VERIFIERS["ship-fix-v0"] = verify_ship_fix


_SAYS = {
    "docstring": ("docstring",),
    "print": ("print",),
    "todo": ("todo",),
    "cents": ("cent", "float"),
    "except": ("except",),
}
"""How a reviewer names each checklist rule (words, case-insensitive), written apart from the rubric's patterns."""


_FUNCTION = {
    "docstring": "{}_reference",
    "print": "record_{}",
    "todo": "{}_within_limit",
    "cents": "{}_fee",
    "except": "parse_{}_amount",
}
"""The function the family plants each violation in, by the module's name (as its source templates write it)."""


def _fixes(body: str, rule: str) -> bool:
    """Whether a comment says how to fix a break of ``rule`` the way its checklist entry asks."""
    words = _words(body)
    if rule == "docstring":
        return bool(words & {"add", "write"})
    if rule == "print":
        return bool(words & {"log", "logger", "logging"})
    if rule == "todo":
        return "TODO(" in body.upper() or ("ticket" in words and bool(words & {"file", "open", "create", "link"}))
    if rule == "cents":
        return bool(words & {"int", "integer"})
    return "catch" in words or any(
        w.endswith(("error", "exception")) and w not in ("error", "exception") for w in words
    )


def _words(body: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z]+", body)}


def _says(body: str, rule: str) -> bool:
    words = _words(body)
    return any(any(w == s or w == s + "s" for w in words) for s in _SAYS[rule])


def _mentions(body: str, path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(token.rsplit("/", 1)[-1].strip(".,:;()`'\"") == name for token in body.split())


def verify_code_review(ev: Evidence) -> Verdict:
    """The request open, a note per violation, none on a trap, only "request changes", its body naming the rules.

    Per violation, a note names the file and the rule, points at the line, and names the function and the fix.

    The agent must have changed nothing but notes on the request. Read from the forge's rows (the agent's
    ``merge_request_notes``, the request's state) and the change log.
    """
    p = ev.params
    mr_id = int(p["mr_id"])
    reasons: list[str] = []
    state = ev.sql.scalar("SELECT state FROM merge_requests WHERE id = ?", (mr_id,))
    if state != "open":
        reasons.append(f"!{p['number']} is {state}, not open")
    notes = [
        (str(kind), str(body or ""))
        for kind, body in ev.sql.all(
            "SELECT kind, body FROM merge_request_notes WHERE merge_request_id = ? AND author_id = ? ORDER BY id",
            (mr_id, ev.actor_id),
        )
    ]
    verdicts = [k for k, _ in notes if k != "comment"]
    if not verdicts or set(verdicts) != {"request_changes"}:
        reasons.append(f"verdicts given: {verdicts or 'none'}, not only request_changes")
    for v in p["violations"]:
        flags = [b for _, b in notes if _mentions(b, v["file"]) and _says(b, v["rule"])]
        if not flags:
            reasons.append(f"no note flags {v['file']} for the {v['rule']} rule")
        elif not any(str(v["line"]) in re.findall(r"(?i)(?:line\s*|L|:)(\d+)", b) for b in flags):
            reasons.append(f"the note on {v['file']} ({v['rule']}) does not point at line {v['line']}")
        function = _FUNCTION[v["rule"]].format(v["file"].rsplit("/", 1)[-1].removesuffix(".py"))
        if flags and not any(function in re.findall(r"\w+", b) for b in flags):
            reasons.append(f"no note on {v['file']} ({v['rule']}) names the function {function}()")
        if flags and not any(_fixes(b, v["rule"]) for b in flags):
            reasons.append(f"no note on {v['file']} ({v['rule']}) says how to fix it")
        others = [o for o in p["violations"] if o is not v]
        if flags and all(any(_mentions(b, o["file"]) and _says(b, o["rule"]) for o in others) for b in flags):
            reasons.append(f"{v['file']} ({v['rule']}) is flagged only together with other findings")
    for t in p["traps"]:
        rule = str(t["rule"])
        if any(_mentions(b, t["file"]) and (not rule or _says(b, rule)) for _, b in notes):
            reasons.append(f"a note flags the trap {t['trap']} in {t['file']}")
    broken = {str(v["rule"]) for v in p["violations"]}
    if not any(k == "request_changes" and all(_says(b, r) for r in broken) for k, b in notes):
        reasons.append(f"no request-changes review names every broken rule ({', '.join(sorted(broken))})")
    kept = set(_SAYS) - {str(v["rule"]) for v in p["violations"]} - {str(t["rule"]) for t in p["traps"]}
    for rule in sorted(kept):
        if any(_says(b, rule) for _, b in notes):
            reasons.append(f"a note says the change breaks the {rule} rule, which it keeps")
    allowed = {"merge_request_notes": {"insert"}, "merge_requests": {"update"}}
    for c in ev.mine():
        fields = c.get("changes") or {}
        fields = json.loads(fields) if isinstance(fields, str) else fields
        if c["op"] not in allowed.get(str(c["table"]), set()) or (
            c["table"] == "merge_requests" and set(fields) - {"updated_at"}
        ):
            reasons.append(f"changed {c['table']} ({c['op']}) beyond review notes")
    return Verdict(not reasons, tuple(reasons))


VERIFIERS["code-review-v0"] = verify_code_review


# -- dependency-bump -----------------------------------------------------------------------------------------

_ALLOWED_DOCS = ("README.md", "CHANGELOG.md")
"""Root files an upgrade may also touch (a note on the upgrade), besides the pin and the call sites."""


def _old_forms(source: str, lib: str) -> set[str]:
    """The 1.x call forms ``source`` still uses, read from its syntax tree (not the rubric's text patterns)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {"unparsable"}
    found: set[str] = set()
    returned = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Return) and n.value is not None}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute | ast.Name | ast.alias) and "to_display" in (
            getattr(node, "attr", None),
            getattr(node, "id", None),
            getattr(node, "name", None),
        ):
            found.add("rename")
        if not isinstance(node, ast.Call):
            continue
        func = node.func  # the library's function: ``lib.name(...)``, or ``name(...)`` after a from-import
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == lib:
            name = func.attr
        elif isinstance(func, ast.Name):
            name = func.id
        else:
            continue
        words = {k.arg for k in node.keywords}
        if name == "split" and "remainder" not in words:
            found.add("required")
        if name == "quantize" and "step" in words:
            found.add("keyword")
        if name == "parse" and id(node) in returned:
            found.add("cents")
    return found


def verify_dependency_bump(ev: Evidence) -> Verdict:
    """The request pins 2.0.0, changes only the pin and the call sites, each site works, CI green, all linked.

    Read from the forge's rows and the request's head: the pin parsed from ``requirements.txt``, the old forms
    found in each call-site module's syntax tree, each site's function called directly in the sandbox (not
    through the handler table the rubric uses), the changed paths against an allow-list (stricter than the
    rubric: any file beyond the pin, the call sites and the root README/CHANGELOG fails).
    """
    from mcp_tools.git.pipeline import call_cases, tag  # the sandbox loads only for code tasks

    p = ev.params
    repo, lib = str(p["repo"]), str(p["lib"])
    found = agent_request(ev, repo)
    if isinstance(found, Verdict):
        return found
    number, title, description, head, pipeline = (
        found.number, found.title, found.description, found.head, found.pipeline
    )  # fmt: skip
    git, base, changed = found.git, found.base, found.changed()
    allowed = {"requirements.txt", *_ALLOWED_DOCS, *p["touched"]}
    reasons = [f"changes {f}, which the upgrade does not need" for f in changed if f not in allowed]

    def blob(path: str) -> str:
        code, out = git.run(["cat-file", "blob", f"{head}:{path}"], ok_codes=(0, 128))
        return out.decode("utf-8", "replace") if code == 0 else ""

    pins: dict[str, str] = {}
    for raw in blob("requirements.txt").splitlines():
        line = raw.split("#", 1)[0]
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.strip().lower()] = version.strip()
    if pins.get(lib) != "2.0.0":
        reasons.append(f"requirements.txt pins {lib} at {pins.get(lib)}, not 2.0.0")
    for path in p["touched"]:
        left = _old_forms(blob(path), lib) & set(p["kinds"])
        reasons += [f"{path} keeps the 1.x form of the {kind} change" for kind in sorted(left)]
    module_of = {site[2]: site[1].removesuffix(".py").replace("/", ".") for site in p["sites"]}
    for args, expected in p["cases"]:
        name = str(args[0]).split(".", 1)[1]
        module = module_of.get(name) or f"{repo.replace('-', '_')}.{str(args[0]).split('.', 1)[0]}"
        got = call_cases(git, head, module, name, [args[1:]])[0]
        if got != ["ok", tag(expected)]:
            reasons.append(f"{module}.{name}{tuple(args[1:])} gives {got}, not {expected!r}")
    pipe = json.loads(pipeline) if isinstance(pipeline, str) else pipeline or {}
    if pipe.get("commit") != head or pipe.get("status") != "passed":
        reasons.append(f"pipeline {pipe.get('status')} at {str(pipe.get('commit'))[:12]}")
    key = str(p["ticket"])
    log = git("log", "--format=%B", f"{base}..{head}", "--").decode().lower()
    if key.lower() not in f"{title}\n{description}".lower() and key.lower() not in log:
        reasons.append(f"{key} named nowhere in !{number}")
    mine = set(ev.inserted("ticket_comments"))
    bodies = [
        str(b)
        for i, b in ev.sql.all(
            "SELECT c.id, c.body FROM ticket_comments c JOIN tickets t ON t.id = c.ticket_id WHERE t.key = ?"
            " ORDER BY c.id",
            (key,),
        )
        if i in mine
    ]
    if not any(re.search(rf"!{number}(?!\d)", b) for b in bodies):
        reasons.append(f"no new comment on {key} names !{number}")
    return Verdict(not reasons, tuple(reasons))


VERIFIERS["dependency-bump-v0"] = verify_dependency_bump


# -- reproduce-bug ---------------------------------------------------------------------------------------------

_PROMISES = ("tomorrow", "next week", "by monday", "by tuesday", "by wednesday", "by thursday", "by friday",
             "end of the week", "end of day", "within ")  # fmt: skip
_INTENDED = ("design", "intended", "documented", "expected behavio")


def _thread_replies(ev: Evidence, header: str) -> list[tuple[int, int | None, str]]:
    """The agent's new mails in the thread of the message ``header`` that reach its sender: (id, parent, body)."""
    mine = ev.inserted("mail_messages")
    if not mine:
        return []
    return [
        (int(i), None if parent is None else int(parent), str(body or ""))
        for i, parent, body in ev.sql.all(
            _ids(
                "SELECT m.id, m.in_reply_to_id, m.body FROM mail_messages m JOIN mail_messages o ON o.thread_id ="
                " m.thread_id JOIN mail_recipients r ON r.message_id = m.id AND r.mailbox_id = o.sender_mailbox_id"
                " WHERE o.message_id = ? AND m.id IN (?*) ORDER BY m.id",
                mine,
            ),
            (header, *mine),
        )
    ]


def _run_new_tests(git: Any, head: str, tests: list[str], module_path: str, source: str) -> int | None:
    """The pytest exit code for ``tests`` at ``head`` with ``module_path`` replaced by ``source`` (None: no run)."""
    from mcp_tools.git.pipeline import PIPELINE_LIMITS, code_sandbox  # the sandbox loads only for code tasks
    from mcp_tools.git.trees import export

    with tempfile.TemporaryDirectory(prefix="companysim-verify-") as tmp:
        tree = export(git, head, Path(tmp) / "t")
        for path in [*tree.rglob("conftest.py"), *(tree / n for n in ("pytest.ini", "setup.cfg", "tox.ini"))]:
            if path.is_symlink() or path.exists():
                path.unlink()
        module = tree / module_path
        if any(p.is_symlink() for p in (module, *module.parents) if p != tree and tree in p.parents):
            return None
        module.unlink(missing_ok=True)
        module.write_text(source, encoding="utf-8")
        (tree / "verify.ini").write_text("[pytest]\n", encoding="utf-8")
        argv = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", "verify.ini", "--rootdir", "."]
        result = code_sandbox().run([*argv, *tests], tree, limits=PIPELINE_LIMITS)
    return None if result.killed_by else result.exit_code


def verify_reproduce_bug(ev: Evidence) -> Verdict:
    """A new test that fails on the bug and passes on the fix, with the customer's input; the ticket; the replies.

    Stricter than the rubric: every part is required (the rubric scores most of them), and the test file must
    contain each of the customer's numbers as the module takes them.
    """
    p = ev.params
    repo, project = str(p["repo"]), str(p["project"])
    found = agent_request(ev, repo)
    if isinstance(found, Verdict):
        return found
    number, head, git, base = found.number, found.head, found.git, found.base
    raw = git("diff", "--name-status", "--no-renames", base, head, "--").decode().splitlines()
    changes = [(line.split("\t", 1)[0], line.split("\t", 1)[1]) for line in raw if "\t" in line]
    reasons = [f"{status} {path}" for status, path in changes if path.startswith("tests/") and status != "A"]
    reasons += [f"adds or changes {path}" for _, path in changes if path.rsplit("/", 1)[-1] == "conftest.py"]
    tests = [path for status, path in changes if status == "A" and path.startswith("tests/") and path.endswith(".py")
             and path.rsplit("/", 1)[-1].startswith("test_")]  # fmt: skip
    if not tests:
        return Verdict(False, (*reasons, f"!{number} adds no test file"))
    on_bug = _run_new_tests(git, head, tests, str(p["module_path"]), str(p["buggy_source"]))
    on_fix = _run_new_tests(git, head, tests, str(p["module_path"]), str(p["fixed_source"]))
    if on_bug != 1:
        reasons.append(f"the new tests do not fail on the bug (pytest exit {on_bug})")
    if on_fix != 0:
        reasons.append(f"the new tests do not pass on the fix (pytest exit {on_fix})")
    text = "\n".join(git.run(["cat-file", "blob", f"{head}:{t}"], ok_codes=(0, 128))[1].decode() for t in tests)
    numbers = {int(n) for n in re.findall(r"(?<![\w.])\d[\d_]*(?![\w.])", text)}
    for arg in p["args"]:
        if isinstance(arg, int) and not isinstance(arg, bool) and arg not in numbers:
            reasons.append(f"the test does not use the customer's {arg}")
        if arg == [] and "[]" not in text.replace(" ", ""):
            reasons.append("the test does not call with no values")
    filed = ev.inserted("tickets")
    tickets = (
        ev.sql.all(
            _ids(
                "SELECT t.key, t.type, t.title, t.description FROM tickets t JOIN projects j ON j.id = t.project_id"
                " WHERE j.key = ? AND t.id IN (?*) ORDER BY t.id",
                filed,
            ),
            (project, *filed),
        )
        if filed
        else []
    )
    if len(tickets) != 1:
        return Verdict(False, (*reasons, f"{len(tickets)} tickets filed in {project}, not 1"))
    key, kind, title, description = tickets[0]
    said = f"{title}\n{description}"
    if kind != "bug":
        reasons.append(f"{key} is a {kind}")
    if not re.search(rf"!{number}(?!\d)", said):
        reasons.append(f"{key} does not name !{number}")
    if str(p["function"]) not in said:
        reasons.append(f"{key} does not name {p['function']}")
    replies = _thread_replies(ev, str(p["customer"]["message"]))
    good = [(i, parent) for i, parent, body in replies if key in body and not any(w in body.lower() for w in _PROMISES)]
    if not good:
        reasons.append(f"no reply in the customer's thread names {key} without promising a date")
    details = str(p["customer"]["details"])
    if details != p["customer"]["message"] and good:
        answered = ev.sql.scalar("SELECT id FROM mail_messages WHERE message_id = ?", (details,))
        if not any(parent == answered for _, parent in good):
            reasons.append("the reply does not answer the mail with the details")
    design = p.get("by_design")
    if design is not None:
        bodies = [b.lower() for _, _, b in _thread_replies(ev, str(design["message"]))]
        if not any(w in b for b in bodies for w in _INTENDED):
            reasons.append("the by-design report is not answered as intended behaviour")
    return Verdict(not reasons, tuple(reasons))


def verify_reproduce_bug_fixed(ev: Evidence) -> Verdict:
    """The customer told, in their thread, that it is already fixed in the release; the summary says the same."""
    p = ev.params
    version = str(p["release"]).lstrip("v")
    reasons = []
    bodies = [b.lower() for _, _, b in _thread_replies(ev, str(p["customer"]["message"]))]
    if not any(version in b and ("fixed" in b or "reproduce" in b) for b in bodies):
        reasons.append(f"no reply in the customer's thread says it was fixed in {version}")
    if any(re.search(r"\b(we|i) (have )?reproduced\b", b) for b in bodies):
        reasons.append("a reply claims the bug was reproduced")
    summary = (_summary(ev) or "").lower()
    if version not in summary or not ("fixed" in summary or "reproduce" in summary):
        reasons.append(f"the summary does not say it was fixed in {version}")
    design = p.get("by_design")
    if design is not None:
        answers = [b.lower() for _, _, b in _thread_replies(ev, str(design["message"]))]
        if not any(w in b for b in answers for w in _INTENDED):
            reasons.append("the by-design report is not answered as intended behaviour")
    return Verdict(not reasons, tuple(reasons))


VERIFIERS["reproduce-bug-v0"] = verify_reproduce_bug
VERIFIERS["reproduce-bug-fixed-v0"] = verify_reproduce_bug_fixed

"""The intranet web app over HTTP (no browser): auth, Host/Origin checks, forms as steps, access rules, escaping."""

from __future__ import annotations

from html import escape

import pytest
from fastapi.testclient import TestClient

from sim.episode import Episode
from sim.web.app import WebBackend, build_web_app, local_path

BASE = "http://127.0.0.1:8000"


@pytest.fixture
def web(store):
    episode = Episode("triage-tickets-v0", store=store, apps=("chat", "directory", "tickets"))
    backend = WebBackend(episode, "s3cret-token")
    backend.start(0)
    client = TestClient(build_web_app(backend), base_url=BASE, follow_redirects=False)
    try:
        yield backend, client
    finally:
        episode.close()


def _login(client):
    assert client.get("/login?token=s3cret-token").status_code == 303


def test_web__refuses_requests_without_the_token(web):
    backend, client = web
    assert client.get("/tickets/SEA-7").status_code == 401
    assert client.get("/login?token=wrong").status_code == 401
    assert client.get("/tickets/SEA-7", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.post("/do/tickets_update", data={"key": "SEA-7", "priority": "high"}).status_code == 401
    assert backend.episode.steps == []  # nothing was read or written
    assert client.get("/tickets/SEA-7", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200


def test_web__refuses_a_foreign_host_and_a_cross_site_form(web):
    backend, client = web
    _login(client)
    assert client.get("/", headers={"Host": "evil.example:8000"}).status_code == 400
    cross = client.post(
        "/do/tickets_update", data={"key": "SEA-7", "priority": "high"}, headers={"Origin": "http://evil.example"}
    )
    assert cross.status_code == 403
    assert backend.episode.steps == []
    same = client.post("/do/tickets_update", data={"key": "SEA-7", "priority": "high"}, headers={"Origin": BASE})
    assert same.status_code == 303


def test_web__a_form_is_one_step_with_the_tools_arguments_and_a_refused_one_changes_nothing(web):
    backend, client = web
    _login(client)
    hash_before = backend.episode.world.state_hash()
    bad = client.post("/do/tickets_update", data={"key": "SEA-7", "priority": "urgent", "_next": "/tickets/SEA-7"})
    assert bad.status_code == 400 and 'role="alert"' in bad.text and "invalid_argument" in bad.text
    assert "Traceback" not in bad.text
    assert backend.episode.world.state_hash() == hash_before
    ok = client.post(
        "/do/tickets_update", data={"key": "SEA-7", "priority": "high", "story_points": "", "_next": "/tickets/SEA-7"}
    )
    assert ok.status_code == 303 and ok.headers["location"] == "/tickets/SEA-7?_ok=tickets_update"
    write = backend.episode.steps[-1]
    assert write["action"] == {"name": "tickets_update", "arguments": {"key": "SEA-7", "priority": "high"}}
    assert write["result"]["priority"] == "high"
    page = client.get(ok.headers["location"])
    assert "<dt>Priority</dt><dd>high</dd>" in page.text and "Done: tickets_update" in page.text
    assert backend.episode.steps[-1]["action"] == {"name": "tickets_get", "arguments": {"key": "SEA-7"}}


def test_web__page_views_are_recorded_reads_that_spend_no_turns_or_time(web):
    backend, client = web
    _login(client)
    clock = backend.status()["clock"]
    for path in ("/chat", "/tickets", "/tickets/SEA-7", "/people"):
        assert client.get(path).status_code == 200
    names = [s["action"]["name"] for s in backend.episode.steps]
    assert names == ["chat_list_channels", "tickets_search", "tickets_get", "directory_search_people"]
    assert backend.status()["clock"] == clock


def test_web__a_restricted_field_is_not_on_a_coworkers_page(web):
    backend, client = web
    _login(client)
    me = backend.episode.tool_context.actor.username
    own = client.get(f"/people/{me}")
    assert own.status_code == 200 and "salary" in own.text  # one's own restricted fields are visible
    people = backend.read("directory_search_people", {"department": "Sales", "limit": 50})["people"]
    other = next(p["username"] for p in people if p["username"] != me and p["manager"] != me)
    page = client.get(f"/people/{other}")
    assert page.status_code == 200
    profile = backend.episode.steps[-1]["result"]
    assert "salary" not in profile and "salary" in profile["restricted"]
    assert "annual" not in page.text and "personal-mail" not in page.text


def test_web__posted_text_is_escaped_and_a_return_path_never_leaves_the_site(web):
    backend, client = web
    _login(client)
    text = '<script>alert("x")</script> & <b>bold</b>'
    out = client.post("/do/chat_post", data={"channel": "off-topic", "message": text, "_next": "https://evil.example/"})
    assert out.status_code == 303 and out.headers["location"] == "/?_ok=chat_post"
    page = client.get("/chat/c/off-topic")
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in page.text
    assert "<script>" not in page.text
    assert [local_path(p) for p in ("//evil.example/x", "/\\evil", "http://a/b", "/tickets?x=1")] == [
        "/",
        "/",
        "/",
        "/tickets?x=1",
    ]


def test_web__submit_form_ends_the_episode_and_later_forms_say_so(web):
    backend, client = web
    _login(client)
    assert client.post("/do/submit", data={"summary": "nothing", "_next": "/"}).status_code == 303
    home = client.get("/")
    assert "The episode is over; reward 0.0" in home.text and "Submit the task" not in home.text
    late = client.post("/do/tickets_update", data={"key": "SEA-7", "priority": "high"})
    assert late.status_code == 409 and "episode_over" in late.text


def _client(store, scenario):
    episode = Episode(scenario, store=store)
    backend = WebBackend(episode, "s3cret-token")
    backend.start(0)
    client = TestClient(build_web_app(backend), base_url=BASE, follow_redirects=False)
    _login(client)
    return episode, backend, client


def test_web__repository_pages_list_repos_browse_the_tree_and_show_a_file(store):
    episode, backend, client = _client(store, "release-notes-v0")
    try:
        index = client.get("/repos")
        assert index.status_code == 200 and 'role="alert"' not in index.text
        repos = [r["name"] for r in backend.read("git_list_repos", {})["repos"]]
        assert repos and all(f'href="/repos/r/{r}"' in index.text for r in repos)
        assert "<caption>Merge requests</caption>" in index.text
        tree = client.get(f"/repos/r/{repos[0]}")
        files = [x["path"] for x in backend.read("git_tree", {"repo": repos[0]})["entries"] if x["type"] != "dir"]
        assert tree.status_code == 200 and files and files[0] in tree.text
        shown = client.get(f"/repos/f/{repos[0]}", params={"path": files[0]})
        out = backend.read("git_read_file", {"repo": repos[0], "path": files[0]})
        first = next(line for line in str(out.get("text", out.get("content", ""))).splitlines() if line.strip())
        assert shown.status_code == 200 and "<pre>" in shown.text and escape(first) in shown.text
    finally:
        episode.close()


def test_web__spreadsheet_page_shows_the_grid_and_its_form_writes_one_cell(store):
    episode, backend, client = _client(store, "quarterly-budget-v0")
    try:
        path = episode.instance.params["document"]
        query = {"document": path, "kind": "sheet"}
        sheet = client.get("/docs/d", params=query)
        assert sheet.status_code == 200 and 'role="alert"' not in sheet.text
        assert "<caption>Sheet " in sheet.text and '<th scope="col">A</th>' in sheet.text
        assert "Engineering" in sheet.text  # a budget line's department, in its row
        assert 'action="/do/sheets_write_cell"' in sheet.text and '<label for="cell-cell">' in sheet.text
        done = client.post(
            "/do/sheets_write_cell",
            data={"document": path, "cell": "D2", "value": "12345", "_next": f"/docs/d?document={path}&kind=sheet"},
        )
        assert done.status_code == 303 and "_ok=sheets_write_cell" in done.headers["location"]
        assert backend.episode.steps[-1]["action"]["name"] == "sheets_write_cell"
        again = client.get("/docs/d", params=query)
        assert "<td>12345</td>" in again.text  # the written value is in the grid the page shows
    finally:
        episode.close()

"""``companysim serve`` as a long-running service: free reads, ended episodes, the next episode, bad
credentials, and many clients at once."""

import http.client
import json
import threading
from collections import Counter

import pytest
import requests

pytest.importorskip("mattermostdriver")

from sim.episode import Episode  # noqa: E402
from sim.replay import replay  # noqa: E402
from sim.trace import TraceWriter  # noqa: E402
from tests.sim.mattermost_server import TOKEN, serving  # noqa: E402

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _api(port):
    return f"http://127.0.0.1:{port}/api/v4"


@pytest.fixture
def triage(store):
    episode = Episode("triage-tickets-v0", store=store)
    backend, port, stop = serving(episode, 3)
    yield episode, backend, port
    stop()
    episode.close()


def test_reads__spend_neither_turns_nor_time(triage):
    episode, backend, port = triage
    limit = episode.instance.limits.max_turns
    town = requests.get(f"{_api(port)}/teams/name/x/channels/name/town-square", headers=AUTH, timeout=10).json()
    clock = backend.status()["clock"]
    for _ in range(limit + 10):
        assert requests.get(f"{_api(port)}/channels/{town['id']}/posts", headers=AUTH, timeout=10).status_code == 200
    status = backend.status()
    assert not status["over"] and status["steps"] >= limit + 10 and status["clock"] == clock


def test_ended_episode__says_how_on_and_reset_starts_the_next(triage):
    episode, backend, port = triage
    first = backend.status()
    submitted = requests.post(f"{_api(port)}/companysim/submit", headers=AUTH, timeout=10).json()
    assert submitted["over"] and 0.0 <= submitted["reward"] <= 1.0
    town = requests.get(f"{_api(port)}/teams/name/x/channels/name/town-square", headers=AUTH, timeout=10)
    assert town.status_code == 503
    body = town.json()
    assert body["id"] == "companysim.episode_over" and "POST /api/v4/companysim/reset" in body["message"]
    bad = requests.post(f"{_api(port)}/companysim/reset", json={"seed": -1}, headers=AUTH, timeout=10)
    assert bad.status_code == 400 and backend.status()["episode_id"] == first["episode_id"]
    nxt = requests.post(f"{_api(port)}/companysim/reset", json={}, headers=AUTH, timeout=10).json()
    assert nxt["seed"] == first["seed"] + 1 and not nxt["over"] and nxt["episode_id"] != first["episode_id"]
    assert requests.get(f"{_api(port)}/users/me", headers=AUTH, timeout=10).json()["username"] == nxt["actor"]
    assert requests.get(f"{_api(port)}/companysim/episode", timeout=10).status_code == 401


def test_wait__is_a_turn_that_moves_the_clock(triage):
    _, backend, port = triage
    before = backend.status()
    waited = requests.post(f"{_api(port)}/companysim/wait", json={"minutes": 30}, headers=AUTH, timeout=10)
    assert waited.json() == {"waited_minutes": 30, "over": False}
    assert backend.status()["clock"] > before["clock"]
    bad = requests.post(f"{_api(port)}/companysim/wait", json={"minutes": "soon"}, headers=AUTH, timeout=10)
    assert bad.status_code == 400 and bad.json()["id"] == "companysim.invalid_argument"
    garbage = requests.post(f"{_api(port)}/companysim/wait", data=b"\xff\xfe", headers=AUTH, timeout=10)
    assert garbage.status_code == 400


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer tökén-ü"},
        {"Cookie": "MMAUTHTOKEN=\u00e9\u00e8"},
        {"Authorization": "Bearer " + TOKEN[:-1] + "\u00ff"},
    ],
)
def test_non_ascii_credentials__are_401_not_500(triage, headers):
    _, _, port = triage
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest("GET", "/api/v4/users/me")
    for name, value in headers.items():
        conn.putheader(name, value.encode("utf-8"))  # raw UTF-8 bytes, as a careless client sends them
    conn.endheaders()
    assert conn.getresponse().status == 401
    conn.close()


def test_non_ascii_password_and_websocket_token__are_refused_cleanly(triage):
    import asyncio

    import websockets

    _, backend, port = triage
    login = requests.post(
        f"{_api(port)}/users/login", json={"login_id": backend.status()["actor"], "password": "pässwörd ✓"}, timeout=10
    )
    assert login.status_code == 401 and login.json()["id"] == "companysim.unauthorized"

    async def talk():
        async with websockets.connect(f"ws://127.0.0.1:{port}/api/v4/websocket") as ws:
            await ws.send(json.dumps({"seq": 1, "action": "authentication_challenge", "data": {"token": "tökén ✓"}}))
            return json.loads(await ws.recv())

    assert asyncio.run(talk())["status"] == "FAIL"


def test_load__twenty_clients_four_thousand_requests_and_the_trace_replays(store, tmp_path):
    trace_path = tmp_path / "served.jsonl"
    writer = TraceWriter(trace_path)
    episode = Episode("triage-tickets-v0", store=store, trace=writer)
    backend, port, stop = serving(episode, 5, auto_next=True)
    api = _api(port)
    town = requests.get(f"{api}/teams/name/x/channels/name/town-square", headers=AUTH, timeout=10).json()
    team = requests.get(f"{api}/users/me/teams", headers=AUTH, timeout=10).json()[0]["id"]
    statuses: Counter[int] = Counter()
    unexpected: list[str] = []
    lock = threading.Lock()

    def client(n):
        session = requests.Session()
        session.headers.update(AUTH)
        plan = [
            ("get", f"{api}/channels/{town['id']}/posts?per_page=20", None),
            ("get", f"{api}/users/me", None),
            ("post", f"{api}/posts", {"channel_id": town["id"], "message": f"client {n} checking in"}),
            ("get", f"{api}/teams/{team}", None),
            ("get", f"{api}/users?per_page=10", None),
            ("post", f"{api}/users/search", {"term": "a"}),
            ("get", f"{api}/channels/{town['id']}", None),
            ("get", f"{api}/companysim/episode", None),
        ]
        for i in range(200):
            method, url, body = plan[i % len(plan)]
            response = session.request(method, url, json=body, timeout=30)
            with lock:
                statuses[response.status_code] += 1
                if response.status_code not in (200, 201):
                    unexpected.append(f"{method} {url}: {response.status_code} {response.text[:120]}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    episodes = backend.seed - 5 + 1
    stop()
    episode.close()
    writer.close()
    assert sum(statuses.values()) == 4000 and unexpected == [], unexpected[:5]
    assert episodes > 1  # 500 posts outrun one episode's turn limit; the next ones started by themselves
    report = replay(trace_path, store=store)
    recorded = sum(json.loads(line)["type"] == "step" for line in trace_path.read_text().splitlines())
    assert report.episodes == episodes and report.steps == recorded > 1000 and not report.mismatches

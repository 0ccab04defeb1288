"""The intranet's speed: page render p50 per app (HTTP, in-process) and browser step p50 (open, click, read).

Page render: one GET through FastAPI's test client (the page's read tool calls, each an ``Episode.step``, and
the HTML), per app's main page. Browser steps: ``browser_open`` of a ticket page (navigation, the page's reads,
the accessibility snapshot), ``browser_click`` of a link that loads another page, ``browser_read`` of the page
as it is (snapshot only), with Chromium headless on the same machine.

Run: python -m bench web
"""

from __future__ import annotations

import tempfile
from typing import Any

from bench.common import fig, percentile, repeat, write_results
from sim.episode import Episode
from worlds.store import WorldStore

SCENARIO = "customer-escalation-v0"
APPS = ("calendar", "chat", "directory", "docs", "mail", "sheets", "tickets")
N_PAGE = 60
N_BROWSER = 30


def run() -> Any:
    """Measure and write bench/results/web.json."""
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        store = WorldStore(tmp)
        figures = _pages(store)
        figures.update(_browser(store))
        return write_results("web", figures)


def _p50_ms(fn: Any, n: int) -> float:
    repeat(fn, 5)  # warm up
    return percentile(repeat(fn, n), 50) * 1e3


def _pages(store: WorldStore) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from sim.web.app import WebBackend, build_web_app

    with Episode(SCENARIO, store=store, apps=APPS) as ep:
        backend = WebBackend(ep)
        backend.start(0)
        client = TestClient(
            build_web_app(backend), base_url="http://127.0.0.1", headers={"Authorization": f"Bearer {backend.token}"}
        )
        key = backend.read("tickets_search", {"limit": 1})["tickets"][0]["key"]
        mail = backend.read("mail_list_messages", {"limit": 1})["messages"][0]["id"]
        pages = {
            "chat": "/chat/c/town-square", "tickets": "/tickets", "ticket": f"/tickets/{key}", "mail": "/mail",
            "mail_message": f"/mail/m/{mail}", "calendar": "/calendar", "people": "/people",
            "docs": "/docs?folder=Shared",
        }  # fmt: skip
        out = {}
        for name, path in pages.items():
            assert client.get(path).status_code == 200, path
            out[f"page_render_p50_{name}"] = fig(_p50_ms(lambda p=path: client.get(p), N_PAGE), "ms")
        return out


def _browser(store: WorldStore) -> dict[str, Any]:
    from sim.web.browser import CHROMIUM, BrowserEpisode

    if not CHROMIUM.exists():
        return {}
    with BrowserEpisode(SCENARIO, store=store, apps=APPS) as env:
        env.reset(0)
        key = env.backend.read("tickets_search", {"limit": 1})["tickets"][0]["key"]

        def act(name: str, **arguments: Any) -> str:
            obs, _, _, _, info = env.step({"name": name, "arguments": arguments})
            assert info["error"] is None, obs
            return obs

        def click_tickets() -> None:
            page = act("browser_open", url="/")
            ref = next(line for line in page.splitlines() if 'link "Tickets"' in line).split("[ref=")[1].rstrip("]:")
            act("browser_click", element=ref)

        open_ms = _p50_ms(lambda: act("browser_open", url=f"/tickets/{key}"), N_BROWSER)
        read_ms = _p50_ms(lambda: act("browser_read"), N_BROWSER)
        both = _p50_ms(click_tickets, N_BROWSER)
        return {
            "browser_open_p50_ticket": fig(open_ms, "ms"),
            "browser_read_p50_ticket": fig(read_ms, "ms"),
            "browser_open_then_click_p50": fig(both, "ms", "click = this - open of the home page"),
            "browser_open_p50_home": fig(_p50_ms(lambda: act("browser_open", url="/"), N_BROWSER), "ms"),
        }

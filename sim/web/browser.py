"""The browser toolset: Playwright driving Debian's Chromium against the intranet, as tools an agent calls.

``WebServer`` runs the intranet (``sim.web.app``) for one episode on 127.0.0.1 in a thread; ``Browser`` is one
Chromium page logged in with the run's token; ``BrowserEpisode`` is the Gymnasium-shaped episode whose reset
option ``modality`` chooses what the agent gets: ``tools`` (the company tools), ``web`` (only the
``browser_*`` tools; ``submit`` is the Home page's form) or ``both``. Either way the world changes only
through ``Episode.step`` (every form is a tool call), so the same task is graded identically.

The observation is the page as an accessibility tree: Playwright's ARIA snapshot in its ``ai`` mode, where
every element has an id (``[ref=e12]``) that ``browser_click``, ``browser_type`` and ``browser_select`` take.
A fresh load of the same page gives the same text (ids are numbered in document order), and the text names
the page by path, never by host or port, so observations do not depend on the port the server got.

Playwright is never told to download a browser: it launches ``/usr/bin/chromium`` (``CHROMIUM``).
"""

from __future__ import annotations

import base64
import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sim.calls import parse_action
from sim.episode import Episode
from sim.errors import BadOption, SimError
from sim.web.app import WebBackend, build_web_app, local_path
from worlds.store import WorldStore

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]
MODALITIES = ("tools", "web", "both")
REF = re.compile(r"e\d{1,6}")
FRAME = re.compile(r"\[ref=(f\d+)(?=e\d)")
"""Playwright prefixes ids with the document's load count (``f3e12``); the observation drops it, so the same
page reads the same however many pages came before, and ``_element`` puts the current one back."""
TIMEOUT_MS = 10_000
"""How long Playwright waits for an element or a page before the action fails (a missing id fails at once)."""


def _tool(name: str, description: str, **props: str) -> dict[str, Any]:
    properties = {k: {"type": "string", "description": v} for k, v in props.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": sorted(props)},
        },
    }


ELEMENT = "The element's id from the page text, e.g. e12."
BROWSER_TOOLS: list[dict[str, Any]] = [
    _tool("browser_open", "Open a page of the intranet by path (e.g. /tickets) and return it.", url="Path or URL."),
    _tool("browser_click", "Click a link or button and return the page that follows.", element=ELEMENT),
    _tool("browser_type", "Replace the text of a text box and return the page.", element=ELEMENT, text="The text."),
    _tool(
        "browser_select", "Choose an option of a drop-down and return the page.", element=ELEMENT, option="Its label."
    ),
    _tool("browser_read", "Return the current page as an accessibility tree with element ids."),
    _tool("browser_screenshot", "Return a PNG screenshot of the current page, base64-encoded."),
]
"""The browser tools as OpenAI function schemas (flat string arguments, like the company tools)."""


class BrowserError(SimError):
    """A browser action that could not be done (no such element, a page outside the intranet, an unknown tool)."""

    def __init__(self, message: str, code: str = "browser_error") -> None:
        super().__init__(message)
        self.code = code


class WebServer:
    """The intranet for one ``WebBackend``, served by uvicorn on 127.0.0.1 in a daemon thread.

    Args:
        backend: The served episode.
        port: TCP port (0: any free one; ``url`` says which).
    """

    def __init__(self, backend: WebBackend, port: int = 0) -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(build_web_app(backend), log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        self.thread.join()
        self.sock.close()


class Browser:
    """One Chromium page on the intranet, logged in with the run's token.

    Args:
        base: The server's URL (``WebServer.url``).
        token: The run's token (the login link sets the cookie).
        chromium: The Chromium binary.
    """

    def __init__(self, base: str, token: str, *, chromium: Path = CHROMIUM) -> None:
        from playwright.sync_api import sync_playwright

        if not chromium.exists():
            raise BrowserError(f"no Chromium at {chromium} (apt-get install chromium)")
        self.base = base
        self._frame = ""
        self._pw = sync_playwright().start()
        try:
            self._browser = self._pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
            self._page = self._browser.new_page(viewport={"width": 1280, "height": 900})
            self._page.set_default_timeout(TIMEOUT_MS)
            self._page.goto(f"{base}/login?token={token}")
        except Exception:
            self._pw.stop()
            raise

    def close(self) -> None:
        """Close the browser and stop Playwright."""
        self._browser.close()
        self._pw.stop()

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one ``browser_*`` tool; returns its observation.

        Raises:
            BrowserError: an unknown tool or argument, an id not on the page, a URL outside the intranet.
        """
        from playwright.sync_api import Error

        methods: dict[str, Callable[..., str]] = {
            "browser_open": self.open, "browser_click": self.click, "browser_type": self.type,
            "browser_select": self.select, "browser_read": self.read, "browser_screenshot": self.screenshot,
        }  # fmt: skip
        fn = methods.get(name)
        if fn is None:
            raise BrowserError(f"unknown tool {name!r}; see the tool list", "unknown_tool")
        try:
            return str(fn(**arguments))
        except TypeError as exc:
            raise BrowserError(f"{name}: {exc}", "invalid_argument") from None
        except Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BrowserError(f"{name}: {first[:200]}") from None

    def open(self, url: str) -> str:
        """Go to a path of the intranet (or a URL on its origin); returns the page."""
        parts = urlsplit(url)
        if parts.netloc and f"{parts.scheme}://{parts.netloc}" != self.base:
            raise BrowserError(f"only intranet pages open here; got {url!r:.80}")
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        self._page.goto(self.base + local_path(path or "/"))
        return self.read()

    def click(self, element: str) -> str:
        """Click an element by id; returns the page that follows (a form's result, a link's target)."""
        self._element(element).click()
        self._page.wait_for_load_state()
        return self.read()

    def type(self, element: str, text: str) -> str:
        """Replace a text box's text; returns the page."""
        self._element(element).fill(text)
        return self.read()

    def select(self, element: str, option: str) -> str:
        """Choose a drop-down option by its label or value; returns the page."""
        self._element(element).select_option(option)
        return self.read()

    def read(self) -> str:
        """The page: its path, its title, and its accessibility tree with element ids."""
        parts = urlsplit(self._page.url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        tree = self._page.aria_snapshot(mode="ai").replace(" [cursor=pointer]", "")
        frame = FRAME.search(tree)
        self._frame = frame.group(1) if frame else ""
        tree = FRAME.sub("[ref=", tree)
        return f"page: {path}\ntitle: {self._page.title()}\n{tree}"

    def screenshot(self) -> str:
        """The whole page as a PNG, base64-encoded."""
        return base64.b64encode(self.png()).decode("ascii")

    def png(self) -> bytes:
        """The whole page as PNG bytes."""
        return self._page.screenshot(full_page=True, animations="disabled", caret="hide")

    @property
    def page(self) -> Any:
        """The Playwright page (tests check its DOM; agents use the tools)."""
        return self._page

    def _element(self, element: str) -> Any:
        if not isinstance(element, str) or not REF.fullmatch(element):
            raise BrowserError(f"element: expected an id from the page text like e12; got {element!r:.40}")
        locator = self._page.locator(f"aria-ref={self._frame}{element}")
        if locator.count() == 0:
            raise BrowserError(f"element: no {element} on this page; read the page again")
        return locator


class BrowserEpisode:
    """An episode played through the intranet in a browser, through tools, or both (reset option ``modality``).

    Resets use ``turns: writes`` (page views are free reads, as in ``companysim web``). The server and the
    browser start at the first reset that needs them and stay up across resets.

    Args:
        scenario: A registered scenario id.
        store: Where base worlds are cached.
        noise: The fault-injection profile (faults hit page reads and form writes like tool calls).
        chromium: The Chromium binary.
        **kwargs: Passed on to ``Episode`` (``trace``, ``npcs``, ``apps``, ``db``).
    """

    def __init__(
        self,
        scenario: str,
        *,
        store: WorldStore | None = None,
        noise: str | dict[str, Any] = "none",
        chromium: Path = CHROMIUM,
        **kwargs: Any,
    ) -> None:
        self.episode = Episode(scenario, store=store, noise=noise, **kwargs)
        self.backend = WebBackend(self.episode)
        self.chromium = chromium
        self.modality = "web"
        self.server: WebServer | None = None
        self.browser: Browser | None = None

    def __enter__(self) -> BrowserEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reset(self, seed: int = 0, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode; returns (prompt, info) with ``tools`` for the chosen modality.

        Raises:
            BadOption: ``modality`` is not tools, web or both (nothing is reset).
        """
        opts = {"turns": "writes", "modality": "web", **(options or {})}
        if opts["modality"] not in MODALITIES:
            raise BadOption(f"modality must be one of {', '.join(MODALITIES)}; got {opts['modality']!r:.40}")
        self.modality = opts["modality"]
        self.backend.options = opts
        status = self.backend.start(seed)
        tools: list[dict[str, Any]] = []
        if self.modality != "web":
            tools += self.backend.info["tools"]
        if self.modality != "tools":
            tools += BROWSER_TOOLS
            if self.server is None:
                self.server = WebServer(self.backend)
            if self.browser is None:
                self.browser = Browser(self.server.url, self.backend.token, chromium=self.chromium)
            self.browser.open("/")
        info = {"episode_id": status["episode_id"], "actor": status["actor"], "modality": self.modality, "tools": tools}
        return status["prompt"], info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One action: a ``browser_*`` tool (web, both) or a company tool (tools, both)."""
        error: dict[str, str] | None = None
        try:
            name, arguments = parse_action(action)
            if name.startswith("browser_") and self.browser is not None and self.modality != "tools":
                obs = self.browser.call(name, arguments)
            elif self.modality == "web":
                raise BrowserError(
                    f"unknown tool {name!r}; in the web modality use the browser_* tools", "unknown_tool"
                )
            else:
                with self.backend.lock:
                    obs, _, _, _, step_info = self.episode.step({"name": name, "arguments": arguments})
                error = step_info["error"]
        except SimError as exc:
            error = {"code": exc.code, "message": str(exc)}
            obs = f"error [{exc.code}]: {exc}"
        done = self.episode.done
        reward = self.episode.grade().value if done else 0.0
        return obs, reward, done, False, {"error": error}

    def close(self) -> None:
        """Close the browser, stop the server and close the episode."""
        if self.browser is not None:
            self.browser.close()
            self.browser = None
        if self.server is not None:
            self.server.close()
            self.server = None
        self.episode.close()

"""The intranet in a browser (``companysim web``) and the browser toolset agents drive it with.

- ``sim.web.html``: escaping, the page layout, labelled forms, JSON values as tables.
- ``sim.web.pages`` (chat, tickets, mail, home) and ``sim.web.pages_more`` (calendar, people, documents and
  spreadsheets, repositories and merge requests): pages made of read tool calls, forms naming write tools.
- ``sim.web.app``: the FastAPI app over a live episode (token, Host and Origin checks; ``POST /do/<tool>``).
- ``sim.web.browser``: the server in a thread, Playwright on Debian's Chromium, the ``browser_*`` tools and
  ``BrowserEpisode`` (the ``modality`` option: tools, web or both).

FastAPI and Playwright load only when these modules are imported (the CLI imports them inside its command).
"""

__all__: list[str] = []

"""The errors of ``companysim server``, under the sim layer's root.

Tree::

    SimError
    └── ServerError          code + HTTP status: what a client sees as one line with a stable code
        ├── Busy             "busy" (429): every episode slot is taken; carries Retry-After
        ├── NoEpisode        "no_episode" (404): no live episode under that id (or the token is not its own)
        ├── EpisodeFailed    "episode_failed" (410): the worker holding the episode died; the episode is gone
        ├── Unauthorized     "unauthorized" (401): a missing or wrong token
        └── Draining         "draining" (503): the server is shutting down and takes no new work
"""

from __future__ import annotations

from sim.errors import SimError


class ServerError(SimError):
    """An error a served client sees: ``code`` is stable, ``status`` the HTTP status it maps to."""

    code = "server_error"
    status = 400

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status


class Busy(ServerError):
    """Every episode slot is in use; retry after ``retry_after`` seconds."""

    code = "busy"
    status = 429

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class NoEpisode(ServerError):
    """No live episode under that id for this caller (unknown, closed, reaped, or another caller's)."""

    code = "no_episode"
    status = 404


class EpisodeFailed(ServerError):
    """The episode's worker process died; its episodes are gone and reported failed, never left hanging."""

    code = "episode_failed"
    status = 410


class Unauthorized(ServerError):
    """The request carries no token, or not the right one."""

    code = "unauthorized"
    status = 401


class Draining(ServerError):
    """The server is draining for shutdown: in-flight steps finish, nothing new starts."""

    code = "draining"
    status = 503

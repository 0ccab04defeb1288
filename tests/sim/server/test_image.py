"""The server's Docker image: built on the local engine, run, driven through ORS from outside, then removed.

Opt-in by ``COMPANYSIM_IMAGE_TESTS=1`` (``.ci/run`` sets it): building takes about a minute (a wheelhouse of every
pin, then the install inside the image). Without an engine it skips with the reason, except under ``CI=true``,
where it fails. The engine CI starts (``.ci/docker-setup.sh``) has no bridge network, so ``-p`` cannot publish a
port: the container shares the host's network instead and binds 127.0.0.1, reached from this process outside
it, with a data-plane token.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from scenarios.registry import make
from tests.sim.server.conftest import free_port
from tests.sim.server.test_ors import OrsEnv

TAG, TOKEN = "companysim/server:test-image", "image-test-token"


def _engine() -> Any:
    from mcp_tools.errors import SandboxUnavailable
    from mcp_tools.sandbox.engine import connect

    if os.environ.get("COMPANYSIM_IMAGE_TESTS") != "1" and os.environ.get("CI") != "true":
        pytest.skip("the image build takes about a minute: set COMPANYSIM_IMAGE_TESTS=1 to run it")
    try:
        api = connect()
        api.ping()
    except (SandboxUnavailable, Exception) as exc:  # noqa: BLE001 - any failure to reach the engine
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs the Docker engine for the server image: {exc}")
        pytest.skip(f"no Docker engine reachable: {str(exc).splitlines()[0]}")
    return api


@pytest.fixture(scope="module")
def image() -> Iterator[tuple[Any, str]]:
    from mcp_tools.sandbox.engine import connect
    from sim.server.image import build_server_image

    api = _engine()
    report = build_server_image(tag=TAG)
    try:
        yield api, report.tag
    finally:
        # deleting the image's layers is disk work the engine does before it answers: on a loaded machine it has
        # taken over the API's 60 s read timeout, so the removal gets a client that waits as long as the build may
        connect(timeout=600).remove_image(report.tag, force=True)


def test_image__serves_an_episode_through_ors_from_outside_the_container(image: tuple[Any, str]) -> None:
    from ors.client import ORS

    api, tag = image
    port = free_port()
    container = api.create_container(
        tag, command=["server", "--host", "127.0.0.1", "--workers", "1"],
        environment={"COMPANYSIM_PORT": str(port), "COMPANYSIM_SERVER_TOKEN": TOKEN},
        host_config=api.create_host_config(network_mode="host"), labels={"org.companysim.test": "image"},
    )  # fmt: skip
    try:
        api.start(container)
        deadline = time.monotonic() + 120
        while api.inspect_container(container)["State"]["Health"]["Status"] != "healthy":
            assert api.inspect_container(container)["State"]["Running"], "the server exited"
            assert time.monotonic() < deadline, "the HEALTHCHECK never passed"
            time.sleep(1)
        url = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(url + "/health", timeout=5) as r:
            assert json.loads(r.read()) == {"status": "healthy"}
        inside = api.inspect_image(tag)["Config"]
        assert inside["User"] == "64001" and "/health" in " ".join(inside["Healthcheck"]["Test"])
        with ORS(base_url=url, api_key=TOKEN) as client:
            env = client.environment("triage-tickets-v0")
            task = env.get_task("test", 0)
            with env.session(task=task) as session:
                agent = OrsEnv(session, session.get_prompt()[0].text)
                make("triage-tickets-v0").oracle(agent)
                if not agent.done:
                    agent.call("submit", summary="oracle done")
                assert agent.finished and agent.reward == 1.0
        with pytest.raises(urllib.error.HTTPError) as refused:  # the data plane needs the token
            urllib.request.urlopen(urllib.request.Request(url + "/reset", data=b"{}", method="POST"), timeout=5)
        assert refused.value.code == 401
    finally:
        api.remove_container(container, force=True)
    assert not api.containers(all=True, filters={"label": "org.companysim.test=image"})

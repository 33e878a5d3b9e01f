"""A production server (deploy/start.sh) whose Redis stops under a signed-in
person, on a Redis of the test's own: Redis carries the live pushes, the
rate limits and the sessions' sockets, not the person's work, so every page
and every save goes on working, logging out included, and the log says
once that Redis is away (conversations.outages, docs/adr/0103). Before,
logging out wrote a traceback (the session's sockets could not be told)."""

from __future__ import annotations

import re

import pytest

from .test_pages_while_the_database_is_down import Visitor

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def test_with_redis_stopped_pages_saves_and_logging_out_work_and_the_log_says_it_once(start_production, private_services):
    postgres, redis = private_services
    server = start_production({"DATABASE_URL": postgres.url, "REDIS_URL": redis.url}, processes=1)
    ada = Visitor(server.url)
    ada.sign_up("ada")
    workspace = ada.request("/threads/new/", {})[1]["Location"]
    thread_id = re.search(r"/threads/([0-9a-f-]{36})/workspace/", workspace).group(1)
    before = len(server.server_lines())

    redis.stop()

    assert ada.request("/threads/")[0] == 200
    status, _, body = ada.request(workspace)
    assert status == 200 and 'id="doc-form"' in body
    status, _, body = ada.request(
        f"/threads/{thread_id}/workspace/document/save/",
        {"base_version": "0", "title": "Notes", "content": "Written while Redis was away."},
        **{"HX-Request": "true"},
    )
    assert status == 200 and 'data-state="saved"' in body
    status, _, body = ada.request(f"{workspace}plan/add/", {"text": "A step"}, **{"HX-Request": "true"})
    assert status == 200 and "A step" in body
    assert ada.request(workspace)[2].count("Written while Redis was away.") >= 1
    status, headers, _ = ada.request("/accounts/logout/", {})
    assert (status, headers["Location"]) == (302, "/accounts/login/")
    assert ada.request("/threads/")[1]["Location"].startswith("/accounts/login/")  # signed out

    lines = server.server_lines()[before:]
    assert not [line for line in lines if "Traceback" in line or " ERROR " in line], "\n".join(lines)
    warnings = [line for line in lines if " WARNING " in line]
    assert len(warnings) == 1, "\n".join(warnings)
    assert re.search(r"WARNING haico\.[\w.]+ Redis is unreachable \(Error 111 .*Connection refused\.\): ", warnings[0])

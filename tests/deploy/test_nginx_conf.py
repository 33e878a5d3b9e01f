"""deploy/nginx.conf as deploy/nginx_conf.py renders it: what it says and
that Debian's nginx accepts it (`nginx -t`), plain and with TLS. nginx in
front of real servers: tests/browser/test_behind_proxy.py."""

import re
import subprocess
import sys

import pytest

from tests.support import nginx
from tests.support.nginx import BASE_DIR, Nginx, render


def test_the_rendered_config_sends_everything_to_every_process_with_the_headers_the_app_needs():
    text = render(upstreams=["127.0.0.1:8000", "127.0.0.1:8001"], listen="80")
    assert re.findall(r"^\s*server ([\d.:]+);", text, re.MULTILINE) == ["127.0.0.1:8000", "127.0.0.1:8001"]
    for header in (
        "Host $http_host",
        "X-Forwarded-Proto $scheme",
        "X-Forwarded-For $remote_addr",
        "Upgrade $http_upgrade",
        "Connection $haico_connection",
    ):
        assert f"proxy_set_header {header};" in text
    assert "client_max_body_size 30m;" in text  # the 25 MB archive import and a margin
    websocket = text[text.index("location /ws/") :]
    assert "proxy_read_timeout 3600s;" in websocket[: websocket.index("}")]
    mcp = text[text.index("location /mcp") :]
    assert "proxy_buffering off;" in mcp[: mcp.index("}")]
    assert "{{" not in text and "ssl" not in text


def test_the_archive_limit_fits_under_the_proxy_limit(settings):
    text = render(upstreams=["127.0.0.1:8000"])
    limit_mb = int(re.search(r"client_max_body_size (\d+)m;", text).group(1))
    assert settings.HAICO_ARCHIVE_MAX_BYTES + 1024 * 1024 <= limit_mb * 1024 * 1024


@pytest.mark.parametrize("tls", [False, True])
def test_nginx_accepts_the_rendered_config(tmp_path, tls):
    if reason := nginx.available(tls=tls):
        pytest.skip(reason)
    proxy = Nginx(tmp_path, upstreams=["127.0.0.1:8000", "127.0.0.1:8001"], tls=tls)
    checked = proxy.test_config()
    assert checked.returncode == 0, checked.stderr
    assert "syntax is ok" in checked.stderr


@pytest.mark.parametrize(
    "args", [[], ["--upstream", "no-port"], ["--upstream", "a:1", "--tls-cert", "c.pem"], ["--upstream", "a:1; evil"]]
)
def test_the_renderer_refuses_what_nginx_could_not_use(args):
    done = subprocess.run(
        [sys.executable, str(BASE_DIR / "deploy" / "nginx_conf.py"), *args], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert "error:" in done.stderr

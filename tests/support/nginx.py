"""nginx (Debian's) in front of server processes, as deploy/nginx.conf
configures it, for tests and the load bench.

`Nginx(workdir, upstreams=[...], tls=False)` renders deploy/nginx.conf with
deploy/nginx_conf.py for the given server processes, wraps it in a main
configuration of its own (pid, logs and temporary files in `workdir`; with
TLS a self-signed certificate made with openssl) and runs
`nginx -c <file> -p <workdir>` in the foreground (`daemon off`) on a free
port; `.url`, `.stop()`, `.error_log()`. `available()` says why it cannot
run here (None when it can).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BASE_DIR / "deploy"))
from nginx_conf import render  # noqa: E402

from tests.support.ports import free_port  # noqa: E402
from tests.support.tls import openssl_missing, self_signed_certificate  # noqa: E402


def nginx_binary() -> str | None:
    return shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)


def available(*, tls: bool = False) -> str | None:
    if nginx_binary() is None:
        return "nginx is not installed (apt-get install nginx)"
    if tls and (reason := openssl_missing()):
        return reason
    return None


MAIN = """\
{user}worker_processes 1;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log {workdir}/access.log;
    client_body_temp_path {workdir}/body;
    proxy_temp_path {workdir}/proxy;
    fastcgi_temp_path {workdir}/fastcgi;
    uwsgi_temp_path {workdir}/uwsgi;
    scgi_temp_path {workdir}/scgi;
    include {workdir}/haico.conf;
}}
"""


class Nginx:
    def __init__(self, workdir: Path, *, upstreams: list[str], tls: bool = False):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.tls = tls
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        cert = key = ""
        if tls:
            cert, key = (str(path) for path in self_signed_certificate(self.workdir))
        (self.workdir / "haico.conf").write_text(
            render(upstreams=upstreams, listen=f"127.0.0.1:{self.port}", tls_cert=cert, tls_key=key)
        )
        # As root, the workers would run as `nobody`, who cannot enter a private temporary directory.
        user = "user root;\n" if os.geteuid() == 0 else ""
        self.config = self.workdir / "nginx.conf"
        self.config.write_text(MAIN.format(user=user, workdir=self.workdir))
        self.process: subprocess.Popen | None = None

    def test_config(self) -> subprocess.CompletedProcess:
        return subprocess.run(
            [nginx_binary(), "-t", "-c", str(self.config), "-p", str(self.workdir)], capture_output=True, text=True, timeout=30
        )

    def start(self) -> None:
        self.process = subprocess.Popen(
            [nginx_binary(), "-c", str(self.config), "-p", str(self.workdir)],
            stdout=subprocess.DEVNULL,
            stderr=open(self.workdir / "stderr.log", "wb"),
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited with {self.process.returncode}:\n{self.error_log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"nginx did not listen within 30 s:\n{self.error_log()}")

    def error_log(self) -> str:
        texts = []
        for name in ("stderr.log", "error.log"):
            path = self.workdir / name
            if path.exists():
                texts.append(path.read_text(errors="replace"))
        return "\n".join(texts)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: nginx's fast shutdown
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

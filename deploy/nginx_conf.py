"""Render deploy/nginx.conf for a set of server processes (docs/adr/0058).

    python3 deploy/nginx_conf.py --upstream 127.0.0.1:8000 --upstream 127.0.0.1:8001 [--listen 80]
        [--server-name haico.example.com] [--tls-cert CERT --tls-key KEY] > haico.conf

With a certificate the server listens with TLS (HTTP/2 on) and tells the
app the request was https (X-Forwarded-Proto). Standard library only, so it
runs with any python3, outside the app's environment.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "nginx.conf"


def render(*, upstreams: list[str], listen: str = "80", server_name: str = "_", tls_cert: str = "", tls_key: str = "") -> str:
    if not upstreams:
        raise ValueError("at least one --upstream host:port")
    for upstream in upstreams:
        if not re.fullmatch(r"[A-Za-z0-9_.\-\[\]:]+:\d{1,5}", upstream):
            raise ValueError(f"--upstream {upstream!r} is not host:port")
    if bool(tls_cert) != bool(tls_key):
        raise ValueError("--tls-cert and --tls-key go together")
    if tls_cert:
        # `listen ... http2` rather than `http2 on;`: Debian 12 has nginx 1.22.
        listen_lines = f"    listen {listen} ssl http2;"
        tls = f"    ssl_certificate {tls_cert};\n    ssl_certificate_key {tls_key};\n    ssl_protocols TLSv1.2 TLSv1.3;\n"
    else:
        listen_lines, tls = f"    listen {listen};", ""
    text = TEMPLATE.read_text()
    # The template's header comment is about rendering it; the result says where it came from.
    text = text[text.index("upstream haico {") :]
    values = {
        "upstream_servers": "\n".join(f"    server {upstream};" for upstream in upstreams),
        "listen": listen_lines,
        "server_name": server_name,
        "tls": tls,
    }
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    leftover = re.findall(r"\{\{\w+\}\}", text)
    if leftover:
        raise ValueError(f"the template has placeholders this script does not fill: {leftover}")
    return "# Rendered from deploy/nginx.conf by deploy/nginx_conf.py; edit those, not this.\n" + text


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", action="append", default=[], help="host:port of a server process (repeat)")
    parser.add_argument("--listen", default="80", help="port (or address:port) nginx listens on")
    parser.add_argument("--server-name", default="_")
    parser.add_argument("--tls-cert", default="")
    parser.add_argument("--tls-key", default="")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(
            render(
                upstreams=args.upstream,
                listen=args.listen,
                server_name=args.server_name,
                tls_cert=args.tls_cert,
                tls_key=args.tls_key,
            )
        )
    except ValueError as exc:
        parser.error(str(exc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""The Dockerfile and compose.yaml agree with the start script and the nginx
config. No container engine runs here (README), so this is what can be
checked without one: the compose file parses, its services are there, the
web service runs the start script on the ports nginx sends to, and every
variable it sets is one the app or the script reads."""

import re
import shlex

import yaml

from tests.support.nginx import BASE_DIR, render

COMPOSE = yaml.safe_load((BASE_DIR / "compose.yaml").read_text())
DOCKERFILE = (BASE_DIR / "Dockerfile").read_text()
SERVICES = COMPOSE["services"]


def dockerfile(instruction: str) -> list[str]:
    """The arguments of each `instruction` line, continuation lines joined."""
    lines = DOCKERFILE.replace("\\\n", " ").splitlines()
    return [line.split(None, 1)[1] for line in lines if line.startswith(instruction + " ")]


def web_ports() -> list[int]:
    first = int(SERVICES["web"]["command"][0])
    processes = int(SERVICES["web"]["environment"]["HAICO_WEB_PROCESSES"])
    return [first + i for i in range(processes)]


def test_the_services_are_web_postgresql_redis_the_proxy_and_an_optional_model_server():
    assert set(SERVICES) == {"db", "redis", "web", "proxy", "ollama"}
    assert SERVICES["ollama"]["profiles"] == ["ollama"]
    assert all("profiles" not in SERVICES[name] for name in ("db", "redis", "web", "proxy"))
    assert SERVICES["web"]["depends_on"] == {"db": {"condition": "service_healthy"}, "redis": {"condition": "service_healthy"}}


def test_the_image_starts_with_the_same_script_as_dev_prod_and_ci():
    assert dockerfile("ENTRYPOINT") == ['["deploy/start.sh"]']
    assert dockerfile("CMD") == ['["8000"]']
    assert "exec deploy/start.sh" in (BASE_DIR / "dev").read_text()
    exposed = [int(port) for line in dockerfile("EXPOSE") for port in line.split()]
    assert web_ports() == exposed


def test_nginx_sends_to_exactly_the_web_processes_and_its_config_is_rendered_from_the_template():
    upstreams = [f"web:{port}" for port in web_ports()]
    config = (BASE_DIR / "deploy" / "nginx.compose.conf").read_text()
    assert re.findall(r"^\s*server (web:\d+);", config, re.MULTILINE) == upstreams
    # Up to date with deploy/nginx.conf: re-render it after changing the template.
    assert config == render(upstreams=upstreams, listen="80"), (
        "deploy/nginx.compose.conf is stale: python3 deploy/nginx_conf.py "
        + " ".join(f"--upstream {u}" for u in upstreams)
        + " --listen 80 > deploy/nginx.compose.conf"
    )
    proxy = SERVICES["proxy"]
    assert "./deploy/nginx.compose.conf:/etc/nginx/conf.d/default.conf:ro" in proxy["volumes"]
    assert [port.split(":")[1] for port in proxy["ports"]] == ["80"]
    assert sorted(int(port) for port in SERVICES["web"]["expose"]) == web_ports()


def test_the_web_service_reaches_postgresql_and_redis_by_their_service_names():
    env = SERVICES["web"]["environment"]
    assert re.fullmatch(r"postgres://haico:\$\{POSTGRES_PASSWORD:-haico\}@db:5432/haico", env["DATABASE_URL"])
    assert env["REDIS_URL"] == "redis://redis:6379/0"
    assert env["HAICO_BIND"] == "0.0.0.0"  # reachable from the proxy's container
    assert "?" in env["SECRET_KEY"]  # compose refuses to start without one
    assert SERVICES["db"]["environment"]["POSTGRES_DB"] == "haico"


def test_every_variable_the_web_service_sets_is_read_by_the_app_or_the_start_script():
    readers = (BASE_DIR / "haico_site" / "settings.py").read_text() + (BASE_DIR / "deploy" / "start.sh").read_text()
    unread = [name for name in SERVICES["web"]["environment"] if name not in readers]
    assert unread == []


def test_the_health_check_of_the_image_asks_healthz_on_the_first_process():
    [check] = dockerfile("HEALTHCHECK")
    command = shlex.split(check.split("CMD", 1)[1])
    assert "http://127.0.0.1:8000/healthz" in command[-1]

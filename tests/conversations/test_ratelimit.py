"""conversations.ratelimit: reading a rate, counting in fixed windows, the
address a request counts against, open pages per person, and counts shared
by server processes through Redis (docs/adr/0051)."""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conversations import ratelimit
from conversations.ratelimit import Rate, parse_rate

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "text, rate",
    [
        ("10/hour", Rate(10, 3600)),
        ("5/15min", Rate(5, 900)),
        ("3/d", Rate(3, 86400)),
        ("20/minute", Rate(20, 60)),
        (" 7 / 30s ", Rate(7, 30)),
        ("2/hours", Rate(2, 3600)),
        ("off", None),
        ("", None),
        ("0/hour", None),
    ],
)
def test_rates_read_as_people_write_them(text, rate):
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["10", "ten/hour", "10/fortnight", "10/hour/2", "-1/hour"])
def test_a_rate_that_is_not_one_is_refused_and_the_check_says_which(text, settings):
    with pytest.raises(ValueError, match="write it like 10/hour"):
        parse_rate(text)
    from conversations.checks import rate_limits_are_rates

    settings.HAICO_RATE_SIGNUP = text
    [error] = rate_limits_are_rates(None)
    assert error.msg.startswith("HAICO_RATE_SIGNUP: not a rate")


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0.2, "1 second"),
        (45, "45 seconds"),
        (60, "1 minute"),
        (61, "2 minutes"),
        (3599, "60 minutes"),
        (3600, "1 hour"),
        (7200, "2 hours"),
    ],
)
def test_waits_are_said_rounded_up(seconds, text):
    assert ratelimit.duration_text(seconds) == text


def test_counts_stop_at_the_rate_and_start_again_with_the_next_window(monkeypatch):
    now = [1_000_000.0]
    monkeypatch.setattr(ratelimit.time, "time", lambda: now[0])
    rate = Rate(3, 60)
    assert [ratelimit.hit("probe", "10.0.0.1", rate) for _ in range(3)] == [None, None, None]
    assert ratelimit.over("probe", "10.0.0.1", rate) == pytest.approx(20.0)  # 1_000_000 is 40 s into its minute
    assert ratelimit.hit("probe", "10.0.0.1", rate) == pytest.approx(20.0)
    assert ratelimit.hit("probe", "10.0.0.2", rate) is None  # someone else
    assert ratelimit.hit("other", "10.0.0.1", rate) is None  # something else
    now[0] += 20
    assert ratelimit.over("probe", "10.0.0.1", rate) is None and ratelimit.hit("probe", "10.0.0.1", rate) is None
    assert ratelimit.hit("probe", "10.0.0.1", None) is None  # "off"


def test_a_cache_that_cannot_be_reached_limits_nobody(monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(ratelimit.cache, "add", broken)
    monkeypatch.setattr(ratelimit.cache, "get", broken)
    assert ratelimit.hit("probe", "x", Rate(1, 60)) is None
    assert ratelimit.over("probe", "x", Rate(0 + 1, 60)) is None
    assert "could not reach the cache" in caplog.text


@pytest.mark.parametrize(
    "raw, counted_as",
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"),  # the same household
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("", "unknown"),
    ],
)
def test_an_address_counts_as_itself_and_ipv6_as_its_64(raw, counted_as):
    assert ratelimit.address_of(SimpleNamespace(META={"REMOTE_ADDR": raw})) == counted_as
    assert ratelimit.address_of({"client": (raw, 5555)}) == counted_as


def test_open_pages_count_in_two_windows_and_a_dead_servers_drop_out(monkeypatch):
    now = [6_000_000.0]
    monkeypatch.setattr(ratelimit.time, "time", lambda: now[0])
    window = ratelimit.socket_window()
    for _ in range(3):
        ratelimit.socket_count(7, window, 1)
    assert ratelimit.sockets_open(7) == 3
    now[0] += ratelimit.SOCKET_WINDOW_SECONDS  # the next window: nobody renewed yet
    assert ratelimit.sockets_open(7) == 3
    ratelimit.socket_count(7, window + 1, 1)  # one page renews; two were on a server that died
    ratelimit.socket_count(7, window, -1)  # ... and one closes
    ratelimit.socket_count(7, window + 1, -1)
    now[0] += ratelimit.SOCKET_WINDOW_SECONDS
    assert ratelimit.sockets_open(7) == 0


def test_pages_renew_their_count_inside_every_window_at_moments_spread_over_it():
    window = ratelimit.SOCKET_WINDOW_SECONDS
    offsets = [ratelimit.socket_renewal_offset() for _ in range(50)]
    # 50 pages opened together do not renew together...
    assert max(offsets) - min(offsets) > window / 4
    for offset in offsets:
        assert 0 < offset < window / 2 + 0.01
        # ... and each renews in the next window, whenever it asks.
        for now in (6_000_000.0, 6_000_000.0 + offset, 6_000_000.0 + window - 0.001):
            renewal = now + ratelimit.seconds_to_socket_renewal(offset, now)
            assert ratelimit.socket_window(renewal) == ratelimit.socket_window(now) + 1
            assert renewal % window == pytest.approx(offset)


@pytest.mark.redis
def test_counts_are_shared_by_server_processes_through_redis(redis_url, settings):
    """Another process (as another server would) uses up an address's
    sign-ups; this one, on the same Redis, refuses the next."""
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url, "KEY_PREFIX": "haico"}
    }
    from django.core.cache import caches

    caches["default"].clear()
    rate = "3/hour"
    script = (
        "import django; django.setup()\n"
        "from conversations import ratelimit\n"
        "print([ratelimit.hit('signup', '198.51.100.9', ratelimit.parse_rate('3/hour')) for _ in range(3)])\n"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HAICO_")},
        "REDIS_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": "haico_site.settings",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[None, None, None]", done.stderr[-2000:]
    try:
        assert ratelimit.hit("signup", "198.51.100.9", parse_rate(rate)) is not None
        assert ratelimit.hit("signup", "198.51.100.10", parse_rate(rate)) is None
    finally:
        caches["default"].clear()

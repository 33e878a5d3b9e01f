"""`--time-summary`: where a test run's time went, for CI's log.

At the end of the run it prints, per top-level directory of tests/ (each
tests/test_*.py file on its own line), how many tests ran and the seconds
they took (setup + call + teardown, summed: with xdist workers the sum is
more than the wall time), then the run's wall time and the CPU seconds of
this process and of its child processes that have ended (xdist workers,
the browser tests' servers and Chromium). CPU seconds compare runs on a
shared machine, where wall times depend on what else runs.
"""

from __future__ import annotations

import resource
import time
from collections import defaultdict

import pytest


def pytest_addoption(parser):
    parser.getgroup("haico").addoption(
        "--time-summary",
        action="store_true",
        help="print the test seconds per directory of tests/, the wall time and the CPU seconds at the end",
    )


def pytest_configure(config):
    # Only the process that reports (not an xdist worker) adds it up.
    if config.getoption("time_summary") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(TimeSummary(), "haico-time-summary")


def group_of(nodeid: str) -> str:
    """tests/agent/test_x.py::t -> tests/agent; tests/test_x.py::t -> tests/test_x.py."""
    path = nodeid.split("::", 1)[0]
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 1 else path


def _cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class TimeSummary:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.seconds: dict[str, float] = defaultdict(float)
        self.tests: dict[str, int] = defaultdict(int)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        group = group_of(report.nodeid)
        self.seconds[group] += report.duration
        if report.when == "setup":
            self.tests[group] += 1

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter) -> None:
        write = terminalreporter.write_line
        total = sum(self.seconds.values())
        terminalreporter.section("time by directory")
        for group in sorted(self.seconds, key=self.seconds.get, reverse=True):
            share = 100 * self.seconds[group] / total if total else 0.0
            write(f"{group:<40} {self.tests[group]:>5} tests {self.seconds[group]:>9.1f} s {share:>5.1f} %")
        write(f"{'total':<40} {sum(self.tests.values()):>5} tests {total:>9.1f} s")
        own, children = _cpu_seconds(resource.RUSAGE_SELF), _cpu_seconds(resource.RUSAGE_CHILDREN)
        write(
            f"wall {time.monotonic() - self.started:.1f} s; CPU {own + children:.1f} s "
            f"(this process {own:.1f} s, child processes that ended {children:.1f} s)"
        )

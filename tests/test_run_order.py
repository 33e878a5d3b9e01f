"""The order the suite runs in (tests/conftest.py `_run_order`), read from
this run's own collected tests: under pytest-xdist every worker collects
and orders the whole suite the same way, and the workers take it in that
order (`./dev test` turns pytest-xdist's reordering off)."""

from tests.conftest import DEPLOY_TESTS


def _block(item) -> str:
    if item.get_closest_marker("browser"):
        return "browser"
    if item.path.is_relative_to(DEPLOY_TESTS):
        return "deploy"
    return "heavy" if item.get_closest_marker("heavy") else "rest"


def test_browser_tests_then_deploy_tests_then_heavy_tests_then_the_rest(request):
    blocks = [_block(item) for item in request.session.items]
    rank = {"browser": 0, "deploy": 1, "heavy": 2, "rest": 3}
    assert blocks == sorted(blocks, key=rank.__getitem__)


def test_this_test_is_among_the_rest_and_mypy_runs_before_it(request):
    names = [item.nodeid for item in request.session.items]
    mypy = "tests/test_types.py::test_mypy_finds_nothing"
    if mypy in names:  # a run of the whole suite, or of both files
        assert names.index(mypy) < names.index(request.node.nodeid)
    assert _block(request.node) == "rest"

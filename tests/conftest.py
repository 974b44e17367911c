import logging
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["tests.mqtt_broker", "tests.mqtt.pit_broker", "tests.postgres", "tests.skip_policy",
                  "tests.installed_package"]

# Hypothesis' timing health checks judge the machine, not the code: on a loaded 2-core CI box
# generating one input can take a second. Properties and example counts stay as each test sets them.
settings.register_profile("tablectl", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("tablectl")


def _drop_ours(root: logging.Logger) -> None:
    for handler in list(root.handlers):
        if not type(handler).__module__.startswith("_pytest"):  # pytest's own come and go with each phase
            root.removeHandler(handler)


@pytest.fixture(autouse=True)
def _root_logger_as_it_was() -> Iterator[None]:
    """A ``tablectl`` command run in-process sets up the root logger (``configure_logging``): no handler but
    pytest's is left on it when a test starts or ends, or a later test's stderr gets an earlier run's log lines.
    At the start too: a module- or session-scoped fixture runs before this one and left its handler otherwise
    (a fresh-clone CI failure: test_dealer_figures_e2e's module fixture runs ``tablectl demo`` in-process, and a
    later test in that worker read its warnings on its own stderr)."""
    root = logging.getLogger()
    level = root.level
    _drop_ours(root)
    yield
    _drop_ours(root)
    root.setLevel(level)

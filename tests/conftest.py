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


@pytest.fixture(autouse=True)
def _root_logger_as_it_was() -> Iterator[None]:
    """A ``tablectl`` command run in-process sets up the root logger (``configure_logging``): the handler and
    level it leaves are taken away after the test, or a later test's stderr gets the earlier run's log lines
    (a fresh-clone CI failure once the xdist groups put such tests in one worker)."""
    root = logging.getLogger()
    handlers, level = set(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        if not type(handler).__module__.startswith("_pytest"):  # pytest's own come and go with each phase
            root.removeHandler(handler)
    root.setLevel(level)

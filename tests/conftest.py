from hypothesis import HealthCheck, settings

pytest_plugins = ["tests.mqtt_broker", "tests.mqtt.pit_broker", "tests.postgres", "tests.skip_policy"]

# Hypothesis' timing health checks judge the machine, not the code: on a loaded 2-core CI box
# generating one input can take a second. Properties and example counts stay as each test sets them.
settings.register_profile("tablectl", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("tablectl")

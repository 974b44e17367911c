pytest_plugins = ["tests.mqtt_broker"]

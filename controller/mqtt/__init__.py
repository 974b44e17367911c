"""MQTT: the broker addresses and the table's topics, the outbox window (sans-I/O), the MQTT client
(asyncio over paho's public API).

Also the brokers the product runs itself: Mosquitto for the soak and tests, the embedded demo broker (an extra),
and a ready Mosquitto configuration for a pit.
"""

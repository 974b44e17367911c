"""The casino floor: a three-node NATS JetStream cluster serving MQTT (DESIGN.md, "The casino floor").

:mod:`controller.floor.subjects` turns MQTT topics into the NATS subjects permissions are written in,
:mod:`controller.floor.grants` holds what each role may publish and read, :mod:`controller.floor.nats_config`
writes the nodes' configuration files and :mod:`controller.floor.cluster` runs the nodes on one machine.
"""

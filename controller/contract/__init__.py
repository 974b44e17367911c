"""The contract's vocabulary: the names outside tools, labs and the dashboard read (DESIGN.md).

One home for each idea several packages share: the phases of a round (:mod:`.phases`), the alarm codes and
their kinds (:mod:`.alarms`). A leaf: it imports nothing of the rest of ``controller``, so the engine, the
service, the MQTT layer, the recorder and the dashboard (through a generated JSON) all read it without a circle.
"""

"""The contract's vocabulary: the names outside tools, labs and the dashboard read (DESIGN.md).

One home for each idea several packages share: the phases of a round (:mod:`.phases`), the alarm codes and
their kinds (:mod:`.alarms`), a table's topics and payload bytes (:mod:`.topics`), the roles of a pit
(:mod:`.roles`), what a command is answered (:mod:`.results`), and the page's copy of them (:mod:`.page`,
``python -m controller.contract``). A leaf: it imports nothing of the rest of ``controller``, so the engine, the
service, the MQTT layer, the recorder and the dashboard (through the generated JSON) all read it without a circle.
"""

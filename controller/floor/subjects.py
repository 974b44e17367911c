"""MQTT topics as NATS subjects: NATS permissions are written against the subject, never the topic.

NATS Server converts each MQTT topic level separator ``/`` to ``.`` and each ``.`` inside a level to
``//`` (``tables/t01/cmd/pit/jane.doe/open`` is ``tables.t01.cmd.pit.jane//doe.open``); the filter
wildcards ``+`` and ``#`` become ``*`` and ``>``. An MQTT filter ``a/#`` also matches ``a`` itself,
so a grant to read ``a/#`` is the two subjects ``a`` and ``a.>``. Topics with empty levels (a leading,
trailing or doubled ``/``) have escapes of their own in NATS; the product never makes one, so they are
refused here rather than half-converted.
"""

from __future__ import annotations

__all__ = ["mqtt_filter_subjects", "mqtt_topic_subject"]


def mqtt_topic_subject(topic: str) -> str:
    """The NATS subject of an MQTT topic or filter (``+`` -> ``*``, ``#`` -> ``>``)."""
    levels = topic.split("/")
    if any(level == "" for level in levels):
        raise ValueError(f"topic {topic!r}: an empty level (leading, trailing or doubled '/') is not used here")
    out = []
    for i, level in enumerate(levels):
        if level == "+":
            out.append("*")
        elif level == "#":
            if i != len(levels) - 1:
                raise ValueError(f"topic {topic!r}: '#' must be the last level")
            out.append(">")
        elif "+" in level or "#" in level or " " in level or "*" in level or ">" in level:
            raise ValueError(f"topic {topic!r}: level {level!r} holds a wildcard or a space")
        else:
            out.append(level.replace(".", "//"))
    return ".".join(out)


def mqtt_filter_subjects(topic_filter: str) -> tuple[str, ...]:
    """The subjects a subscription to ``topic_filter`` needs: ``a/#`` is ``a`` and ``a.>``."""
    subject = mqtt_topic_subject(topic_filter)
    if topic_filter == "#":
        return (">",)
    if topic_filter.endswith("/#"):
        return (mqtt_topic_subject(topic_filter[:-2]), subject)
    return (subject,)

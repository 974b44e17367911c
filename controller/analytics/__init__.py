"""What the table tells the pit it sees: hold against theoretical, pace, shuffle quality, advantage-play signals.

The figures are computed from the journal's public records (``controller.records``); ``live`` and
``live_signals`` publish them on the ``analytics`` topic, ``report_html`` prints a shift's.
"""

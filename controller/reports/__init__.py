"""Reports read from a table's journal or the recorder's database: recall (rounds, their text and HTML) and
player ratings. The command line (``tablectl recall``, ``tablectl ratings``) parses arguments and calls these."""

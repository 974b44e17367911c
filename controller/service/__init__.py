"""The table PC's shell: settings, the async table service, device-event translation, the journal, commands.

Everything here does I/O around the pure engine in ``controller/game/`` (DESIGN.md, "Layers").
"""

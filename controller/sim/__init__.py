"""The simulated pit: dealers and players acting on simulated devices only, the demo, the chaos soak.

Nothing in the table PC's shell imports this package; the simulated people act through the devices.
"""

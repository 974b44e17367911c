"""Program authentication (DESIGN.md, "Program authentication", a contract): the table runs the build a lab
certified.

* :mod:`controller.selfcheck.program`: the installed files against the hashes pip recorded (the wheel's
  ``RECORD``), the modules nobody installed, the dependencies against their own ``RECORD``;
* :mod:`controller.selfcheck.digest`: the build digest and a lab's seeded HMACs, of the installed files or of a
  wheel (``--reference``);
* :mod:`controller.selfcheck.gate`: the check before ``tablectl run`` or ``demo`` opens a device;
* :mod:`controller.selfcheck.watch`: a running table's re-check (a period, a supervisor's request).
"""

"""Ctrl-C and SIGTERM stop a tablectl process even when its event loop's self-pipe is full.

asyncio's ``add_signal_handler`` learns of a signal only from a byte the C handler writes into the loop's
self-pipe; every ``call_soon_threadsafe`` writes one there too (aiomqtt's writer registration does it for
each publish), and a pipe filled while the loop is busy drops the signal's byte: the demo played on for
ten minutes after a Ctrl-C under load. Real process, real signal.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

# a loop blocked while a thread fills its self-pipe, then the signal: it must still stop
_PROGRAM = textwrap.dedent("""
    import asyncio, os, sys, threading, time
    from controller.stop_signals import on_stop_signals

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        restore = on_stop_signals(loop, stop.set)

        def fill() -> None:
            for _ in range(5000):
                loop.call_soon_threadsafe(lambda: None)

        def busy() -> None:
            filler = threading.Thread(target=fill)
            filler.start()
            filler.join()
            print("ready", flush=True)
            time.sleep(1.0)  # the loop busy: the signal arrives now, its pipe full

        loop.call_soon(busy)
        try:
            await asyncio.wait_for(stop.wait(), 10)
        except TimeoutError:
            print("signal lost", flush=True)
            sys.exit(3)
        finally:
            restore()
        print("stopped", flush=True)

    asyncio.run(main())
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_is_seen_when_the_loop_self_pipe_is_full(sig: signal.Signals) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, (out, err)
    assert out.strip() == "stopped"


def test_the_previous_handlers_come_back() -> None:
    import asyncio

    from controller.stop_signals import on_stop_signals

    before = signal.getsignal(signal.SIGTERM)
    loop = asyncio.new_event_loop()
    try:
        restore = on_stop_signals(loop, lambda: None)
        assert signal.getsignal(signal.SIGTERM) is not before
        restore()
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        loop.close()

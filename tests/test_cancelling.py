"""A task whose cancellation was swallowed once still ends when the service stops its tasks."""

from __future__ import annotations

import asyncio

from controller.cancelling import cancel_and_wait


async def _worker_losing_one_cancel(queue: asyncio.Queue[int], started: asyncio.Event) -> None:
    """As a device worker whose command's ``wait_for`` completed as the cancellation came (Python 3.11 drops it)."""
    lost = False
    while True:
        started.set()
        try:
            await queue.get()
        except asyncio.CancelledError:
            if lost:
                raise
            lost = True  # the first cancellation swallowed, as wait_for's race does
            continue


async def test_a_task_that_swallowed_its_cancellation_is_cancelled_again() -> None:
    started = asyncio.Event()
    task = asyncio.create_task(_worker_losing_one_cancel(asyncio.Queue(), started))
    await started.wait()
    async with asyncio.timeout(5):
        await cancel_and_wait([task])
    assert task.cancelled()


async def test_finished_and_failed_tasks_are_waited_for_without_raising() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    done = asyncio.create_task(asyncio.sleep(0))
    failed = asyncio.create_task(fails())
    await asyncio.sleep(0.01)
    async with asyncio.timeout(5):
        await cancel_and_wait([done, failed])
    assert done.done() and failed.done()

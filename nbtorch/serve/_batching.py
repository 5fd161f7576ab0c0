"""Dynamic batching: requests for one model that arrive within `max_delay` seconds are
concatenated along axis 0 (up to `max_batch_size` rows), run once on a worker thread,
and their rows split back to each request. A request that finds the model idle and
nobody waiting runs at once (no delay at low load)."""
import asyncio
import time

import numpy as np

__all__ = ["Batcher"]


class Batcher:
    """Queues requests of one `ServedModel`; `await submit(arrays)` gives its outputs."""

    def __init__(self, model, executor, metrics, max_batch_size=32, max_delay=0.005):
        self.model, self.executor, self.metrics = model, executor, metrics
        self.max_batch_size = max(1, int(max_batch_size))
        self.max_delay = max(0.0, float(max_delay))
        self.queue = None
        self.task = None
        self.in_flight = 0

    async def submit(self, arrays):
        loop = asyncio.get_running_loop()
        if not self.model.batchable or self.max_batch_size == 1:
            return await self._run([arrays], [arrays[0].shape[0] if arrays else 1])
        if self.queue is None:
            self.queue = asyncio.Queue()
            self.task = loop.create_task(self._loop())
        fut = loop.create_future()
        await self.queue.put((arrays, fut))
        return await fut

    async def _run(self, requests, rows):
        self.in_flight += 1
        try:
            if len(requests) == 1:
                inputs = requests[0]
            else:
                inputs = [np.concatenate(parts, axis=0) for parts in zip(*requests)]
            self.metrics.batch(self.model.name, sum(rows))
            loop = asyncio.get_running_loop()
            outs = await loop.run_in_executor(self.executor, self.model.predict, inputs)
        finally:
            self.in_flight -= 1
        if len(requests) == 1:
            return outs
        split = np.cumsum(rows)[:-1]
        per_output = [np.split(o, split, axis=0) for o in outs]
        return [[parts[i] for parts in per_output] for i in range(len(requests))]

    async def _loop(self):
        while True:
            first = await self.queue.get()
            batch = [first]
            rows = first[0][0].shape[0]
            deadline = time.monotonic() + self.max_delay
            # an idle model runs at once; while it is busy, arrivals gather into a batch
            idle = self.in_flight == 0 and self.queue.empty()
            while rows < self.max_batch_size and not idle:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    item = await asyncio.wait_for(self.queue.get(), left)
                except asyncio.TimeoutError:
                    break
                batch.append(item)
                rows += item[0][0].shape[0]
            for group in _groups(batch):
                asyncio.get_running_loop().create_task(self._dispatch(group))

    async def _dispatch(self, group):
        arrays = [a for a, _ in group]
        rows = [a[0].shape[0] for a in arrays]
        try:
            results = await self._run(arrays, rows)
            if len(group) == 1:
                results = [results]
        except Exception as exc:                  # noqa: BLE001 - each caller gets it
            for _, fut in group:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_, fut), r in zip(group, results):
            if not fut.done():
                fut.set_result(r)

    async def close(self):
        """Wait for running batches, then stop the collecting task."""
        while self.in_flight or (self.queue is not None and not self.queue.empty()):
            await asyncio.sleep(0.005)
        if self.task is not None:
            self.task.cancel()


def _groups(batch):
    """Requests whose inputs agree in every axis but the first can share one run."""
    groups = {}
    for item in batch:
        key = tuple((a.shape[1:], a.dtype.str) for a in item[0])
        groups.setdefault(key, []).append(item)
    return list(groups.values())

"""Shared helpers of the SummaryWriter tests: read a run's event files back."""
import pytest


@pytest.fixture
def read():
    """read(logdir) -> a loaded tensorboard EventAccumulator that keeps every event."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    def load(logdir):
        acc = EventAccumulator(str(logdir), size_guidance={
            "scalars": 0, "images": 0, "histograms": 0, "tensors": 0, "audio": 0,
            "compressedHistograms": 0})
        acc.Reload()
        return acc
    return load

"""Learning-rate schedulers (being written)."""

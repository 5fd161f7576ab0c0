"""The counters the CPU and CUDA caching allocators keep, named as ``torch.cuda.memory_stats``
names them, and what both do with them (count, reset peaks, report)."""
import collections

__all__ = ["PEAKED", "STAT_KEYS", "CountedStats", "reset_peaks", "ordered_stats"]

PEAKED = ("allocated_bytes", "reserved_bytes", "allocation", "segment")   # current + peak

STAT_KEYS = ("allocated_bytes.all.current", "allocated_bytes.all.peak",
             "allocated_bytes.all.allocated", "allocated_bytes.all.freed",
             "reserved_bytes.all.current", "reserved_bytes.all.peak",
             "reserved_bytes.all.allocated", "reserved_bytes.all.freed",
             "allocation.all.current", "allocation.all.peak",
             "segment.all.current", "segment.all.peak",
             "requested_bytes.all.allocated", "num_cache_hits", "num_device_alloc",
             "num_device_free", "num_alloc_retries", "num_ooms")


def reset_peaks(stats):
    """Set every peak counter in `stats` to its current value."""
    for name in PEAKED:
        stats[f"{name}.all.peak"] = stats[f"{name}.all.current"]


def ordered_stats(stats, inactive_bytes):
    """`torch.cuda.memory_stats`' ordered dict of `stats` (keys it lacks count 0), with
    the cached-but-free bytes as inactive_split_bytes."""
    out = collections.OrderedDict((k, int(stats.get(k, 0))) for k in STAT_KEYS)
    out["inactive_split_bytes.all.current"] = inactive_bytes
    return out


_KEYS = {name: (f"{name}.all.current", f"{name}.all.allocated", f"{name}.all.peak",
                f"{name}.all.freed") for name in PEAKED}   # built once: every allocation counts


class CountedStats:
    """The counting both allocators do on their `self.stats` (a Counter)."""

    def _count(self, name, n):
        current, allocated, peak, _ = _KEYS[name]
        s = self.stats
        cur = s[current] + n
        s[current] = cur
        s[allocated] += n
        if cur > s[peak]:
            s[peak] = cur

    def _uncount(self, name, n):
        current, _, _, freed = _KEYS[name]
        s = self.stats
        s[current] -= n
        s[freed] += n

"""Statistics and formatting for the benchmark driver: pure functions, no timing, no imports.

A case's result for one framework is a list of per-round medians (each the median of
one block of samples in that round). It is summarised as the median over rounds with
its spread (interquartile range and min-max), and two frameworks are compared by the
ratio of their medians; `overlap` says when their min-max ranges overlap, i.e. when
the difference is within this run's own noise.
"""
import math

__all__ = ["median", "quantile", "summarize", "ratio", "fraction", "fmt_time", "fmt_spread",
           "fmt_ratio", "fmt_fraction", "markdown_table"]


def quantile(xs, q):
    """The q-quantile of xs by linear interpolation between order statistics (NumPy's
    default method): quantile([1, 2, 3, 4], 0.5) == 2.5."""
    if not xs:
        raise ValueError("quantile of an empty sequence")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile: q must be in [0, 1], got {q}")
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(xs):
    return quantile(xs, 0.5)


def summarize(round_medians):
    """Summary of one framework's per-round medians (seconds per call)."""
    xs = [float(x) for x in round_medians]
    if not xs:
        raise ValueError("summarize: no rounds")
    return {"median": median(xs), "q1": quantile(xs, 0.25), "q3": quantile(xs, 0.75),
            "min": min(xs), "max": max(xs), "rounds": len(xs)}


def ratio(a, b):
    """(median of a / median of b, whether a's and b's min-max ranges overlap), or None."""
    if a is None or b is None or b["median"] <= 0:
        return None
    overlap = a["min"] <= b["max"] and b["min"] <= a["max"]
    return a["median"] / b["median"], overlap


def fraction(summary, amount, limit_rate):
    """Achieved rate (amount per second at the median time) as a fraction of a limit rate:
    e.g. bytes moved per call against the machine's copy bandwidth in bytes/s."""
    if summary is None or not amount or not limit_rate or summary["median"] <= 0:
        return None
    return amount / summary["median"] / limit_rate


def fmt_time(seconds):
    """'1.23 us', '4.56 ms', '7.89 s' with three significant figures."""
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            v = seconds / scale
            digits = 0 if v >= 100 else 1 if v >= 10 else 2
            return f"{v:.{digits}f} {unit}"
    return "-"  # pragma: no cover


def fmt_spread(summary):
    """The min-max range of the per-round medians relative to their median: '-2/+5%'."""
    if summary is None or summary["median"] <= 0:
        return ""
    m = summary["median"]
    lo = 100.0 * (summary["min"] - m) / m
    hi = 100.0 * (summary["max"] - m) / m
    return f"-{abs(lo):.0f}/+{abs(hi):.0f}%" if summary["rounds"] > 1 else ""


def fmt_cell(summary):
    """'4.56 ms -2/+5%' (median and spread), or '-' when there is no result."""
    if summary is None:
        return "-"
    spread = fmt_spread(summary)
    return fmt_time(summary["median"]) + (" " + spread if spread else "")


def fmt_ratio(r):
    """'1.23' for a ratio of medians, '1.23~' when the two ranges overlap, '-' for none."""
    if r is None:
        return "-"
    value, overlap = r
    return f"{value:.2f}" + ("~" if overlap else "")


def fmt_fraction(f):
    return "-" if f is None else f"{f:.2f}"


def markdown_table(header, rows):
    """A Markdown table with columns padded to their widest cell (readable as plain text)."""
    cells = [list(map(str, header))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(r):
        return "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))) + " |"
    sep = "|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":"
                         for i, w in enumerate(widths)) + "|"
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])

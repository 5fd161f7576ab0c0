"""The benchmark driver's report: Markdown tables per group, machine limits, memory, notes.

Printed as the run goes (one table per group of cases, once the group is done) and
optionally written whole to a Markdown file and the raw figures to a JSON file.
"""
import datetime
import json
import os
import platform
import subprocess

import _limits
from _stats import (fmt_cell, fmt_fraction, fmt_ratio, fmt_time, fraction, markdown_table,
                    median, ratio)


def machine_info():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cpus": os.cpu_count(), "system": platform.platform(),
            "date": datetime.datetime.now().isoformat(timespec="seconds")}


def git_commit(path):
    try:
        rev = subprocess.run(["git", "-C", path, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", path, "status", "--porcelain", "--untracked-files=no",
                                "--", "nbtorch", "kernels"], capture_output=True, text=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return (rev or "?") + (" + uncommitted changes" if dirty else "")


def _apart(times, by=1.10):
    """Whether per-process medians `times` differ by more than the factor `by`."""
    return bool(times) and len(times) > 1 and max(times) > by * min(times)


class Report:
    def __init__(self, args, specs, machine, load_start):
        self.args, self.machine, self.load_start = args, machine, load_start
        self.labels = [label for label, _, _ in specs]
        self.framework = {label: fw for label, fw, _ in specs}
        self.hellos, self.commits = {}, {}
        self.results, self.memory = [], []
        self.limits = {}
        self.notes, self.lines = [], []
        self._group, self._pending = None, []

    def out(self, text=""):
        print(text, flush=True)
        self.lines.append(text)

    def note(self, text):
        self.notes.append(text)
        print("  note: " + text, flush=True)

    def hello(self, label, info, commit):
        self.hellos[label] = info
        if commit:
            self.commits[label] = commit

    # ---- header ---------------------------------------------------------------------------

    def header(self):
        m, a = self.machine, self.args
        self.out(f"# nbtorch benchmarks, {m['date']}")
        self.out()
        self.out(f"- machine: {m['cpu']}, {m['cpus']} CPUs, {m['system']}")
        self.out("- load average at start: " + " ".join(f"{x:.2f}" for x in self.load_start))
        if self.load_start[0] >= 0.75 * m["cpus"]:
            self.out(f"- **busy machine**: load {self.load_start[0]:.1f} on {m['cpus']} CPUs "
                     "before the run; multi-threaded timings then measure contention as much "
                     "as the libraries (OpenMP runtimes that spin suffer most); compare a "
                     "`--threads 1` run")
        for label in self.labels:
            h = self.hellos.get(label, {})
            threads = ", ".join(f"{k} {v}" for k, v in h.get("threads", {}).items())
            versions = ", ".join(f"{k} {h[k]}" for k in ("numba", "numpy") if k in h)
            where = f" from {h.get('file', '?')}" if self.framework[label] == "nbtorch" else ""
            commit = f" at {self.commits[label]}" if label in self.commits else ""
            env = ", ".join(f"{k}={v}" for k, v in h.get("env", {}).items()
                            if not k.endswith("_NUM_THREADS")) or "no OMP_*/GOMP_*/KMP_* set"
            self.out(f"- `{label}`: {self.framework[label]} {h.get('version', '?')}{where}{commit}"
                     f" ({versions}); threads: {threads or '-'}; after import: {env}")
        pin = f"pinned to {a.threads} (OMP/OPENBLAS/MKL/NUMBA_NUM_THREADS and set_num_threads)" \
            if a.threads else "library defaults"
        self.out(f"- threads: {pin}")
        procs = getattr(a, "processes", 1)
        self.out(f"- method: each framework in worker processes of its own ({procs} per "
                 "framework, their rounds pooled: PyTorch's speed can differ from one process "
                 "to the next); per case at least "
                 f"{a.warmup} untimed calls at setup (the first compiles or loads kernels, the "
                 "fastest of the others sets the calls per sample), then "
                 f"{a.rounds} rounds, each worker in rotating order "
                 f"running one untimed call and {a.samples} samples of >= {a.min_sample_ms:g} ms "
                 f"(before each block a {a.gap_ms:g} ms pause, then a wait until no worker's "
                 "threads run). Time = median over all processes' rounds of the per-round "
                 "medians, then the min/max of those relative to it. Ratios are ratios "
                 "of medians; `~` marks ranges that overlap (within this run's noise). "
                 "Fractions: bytes per call / time against the copy bandwidth, or flops per "
                 "call / time against the GEMM peak, both measured below in this run.")

    # ---- case results -------------------------------------------------------------------------

    def add(self, case, result):
        if case.group != self._group:
            self._flush()
            self._group = case.group
        self.results.append((case, result))
        self._pending.append((case, result))
        for label, res in result.items():
            if "error" in res:
                self.note(f"{label}: {case.name}: {res['error'].splitlines()[-1][:200]}")

    def limits_done(self):
        self._flush()

    def _rate(self, case, summary):
        amount = case.bytes or case.flops
        return amount / summary["median"] if summary and amount else None

    def _flush(self):
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        self.out()
        self.out(f"## {self._group}")
        self.out()
        if self._group == _limits.GROUP:
            self._limit_table(rows)
        else:
            self._case_table(rows)

    def _limit_table(self, rows):
        body = []
        for case, result in rows:
            for label, res in result.items():
                s = res.get("summary")
                rate = self._rate(case, s)
                unit = "GB/s" if case.bytes else "GFLOP/s"
                body.append([case.name, label, fmt_cell(s),
                             "-" if rate is None else f"{rate / 1e9:.1f} {unit}"])
        self.out(markdown_table(["limit", "worker", "time", "rate"], body))
        for name, members in _limits.LIMITS.items():
            rates = [self._rate(c, r.get(lbl, {}).get("summary")) for c, r in rows
                     if c.name in members for lbl in r]
            rates = [x for x in rates if x]
            if rates:
                self.limits[name] = max(rates)
        if self.limits:
            self.out()
            self.out("Limits used below: " + ", ".join(
                f"{k} {v / 1e9:.1f} {'GFLOP/s' if k == 'gemm' else 'GB/s'}"
                for k, v in self.limits.items()))

    def _case_table(self, rows):
        labels = [lb for lb in self.labels if any(lb in r for _, r in rows)]
        nb = [lb for lb in labels if self.framework[lb] == "nbtorch"]
        refs = [lb for lb in labels if self.framework[lb] in ("torch", "numpy")]
        has_limit = any(c.bytes or c.flops for c, _ in rows)
        header = ["case"] + labels + [f"{n}/{r}" for n in nb for r in refs]
        if has_limit:
            header += [f"{lb} of limit" for lb in labels]
        body = []
        for case, result in rows:
            s = {lb: result.get(lb, {}).get("summary") for lb in labels}
            cells = [case.name]
            for lb in labels:
                res = result.get(lb)
                cells.append(fmt_cell(s[lb]) if s[lb] else
                             "skip" if res and "skip" in res else "error" if res else "-")
            cells += [fmt_ratio(ratio(s[n], s[r])) for n in nb for r in refs]
            if has_limit:
                limit = self.limits.get("gemm" if case.flops else case.limit or "copy")
                cells += [fmt_fraction(fraction(s[lb], case.bytes or case.flops, limit))
                          for lb in labels]
            body.append(cells)
        self.out(markdown_table(header, body))
        split = [f"{case.name}: " + "; ".join(
                     f"{lb} " + " / ".join(fmt_time(t) for t in result[lb]["processes"])
                     for lb in labels if _apart(result.get(lb, {}).get("processes")))
                 for case, result in rows
                 if any(_apart(result.get(lb, {}).get("processes")) for lb in labels)]
        if split:
            self.out()
            self.out("Medians per worker process, where a framework's processes differ by more "
                     "than 10%: " + " · ".join(split))

    # ---- memory, import and the end -------------------------------------------------------

    def add_memory(self, case, mem):
        self.memory.append((case, mem))

    def _memory_table(self):
        if not self.memory:
            return
        labels = [lb for lb in self.labels if any(lb in m for _, m in self.memory)]
        nb = [lb for lb in labels if self.framework[lb] == "nbtorch"]
        refs = [lb for lb in labels if self.framework[lb] == "torch"]
        self.out()
        self.out("## peak resident memory (fresh worker per framework)")
        self.out()
        self.out(f"ru_maxrss growth from after the import to after {self.args.memory_steps + 1} "
                 "steps, MiB (in brackets: after the first step, which includes loading "
                 "kernels). Last row: the median time of the import itself in those workers "
                 "(started one at a time).")
        self.out()

        def grow(m):
            return (m["peak_kb"] - m["base_kb"]) / 1024 if m and "peak_kb" in m else None
        body = []
        for case, mem in self.memory:
            cells = [case.name]
            for lb in labels:
                m = mem.get(lb)
                g = grow(m)
                cells.append("-" if g is None else
                             f"{g:.0f} ({(m['first_kb'] - m['base_kb']) / 1024:.0f})")
            for n in nb:
                for r in refs:
                    gn, gr = grow(mem.get(n)), grow(mem.get(r))
                    cells.append(f"{gn / gr:.2f}" if gn is not None and gr else "-")
            body.append(cells)
        imports = [["import (fresh process)"]]
        for lb in labels:
            ts = [m[lb]["import_s"] for _, m in self.memory if "import_s" in m.get(lb, {})]
            imports[0].append(fmt_time(median(ts)) if ts else "-")
        for n in nb:
            for r in refs:
                imports[0].append("")
        self.out(markdown_table(["case"] + labels + [f"{n}/{r}" for n in nb for r in refs],
                                body + imports))

    def finish(self, load_end, wall_s):
        self._flush()
        self._memory_table()
        self.out()
        self.out("- load average at end: " + " ".join(f"{x:.2f}" for x in load_end) +
                 f"; wall time {wall_s / 60:.1f} min")
        for n in self.notes:
            self.out(f"- note: {n}")
        if self.args.markdown:
            with open(self.args.markdown, "w") as f:
                f.write("\n".join(self.lines) + "\n")
        if self.args.json:
            with open(self.args.json, "w") as f:
                json.dump(self.as_dict(load_end, wall_s), f, indent=1)

    def as_dict(self, load_end, wall_s):
        def case_dict(case, res):
            return {"name": case.name, "group": case.group, "module": case.module,
                    "bytes": case.bytes, "flops": case.flops, "results": res}
        return {"machine": self.machine, "load_start": self.load_start, "load_end": load_end,
                "wall_s": wall_s, "workers": self.hellos, "commits": self.commits,
                "limits": self.limits, "notes": self.notes,
                "args": {k: v for k, v in vars(self.args).items()},
                "cases": [case_dict(c, r) for c, r in self.results],
                "memory": [case_dict(c, m) for c, m in self.memory]}

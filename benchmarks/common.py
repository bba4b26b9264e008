"""Shared helpers for benchmarks: machine description, timing, RESULTS.md sections."""

from __future__ import annotations

import datetime
import fcntl
import os
import platform
import re
import shlex
import resource
import sys
import time
from pathlib import Path

from fstchunk.io.conll import data_path as corpus_path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def data_path(*parts) -> str:
    """The corpus file (fstchunk's one data path), or exit naming it."""
    if "FSTCHUNK_DATA" not in os.environ:       # benchmarks run from anywhere in the checkout
        os.environ["FSTCHUNK_DATA"] = str(Path(__file__).resolve().parents[1].parent
                                          / "shared" / "data")
    p = corpus_path(*parts)
    if not os.path.exists(p):
        sys.exit(f"corpus {p} not found: set FSTCHUNK_DATA")
    return p


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({len(os.sched_getaffinity(0))} usable), {cpu}, " \
           f"Python {platform.python_version()}"


def peak_rss_mb() -> float:
    """Peak resident memory of this process and its finished children, MB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024.0


class Timer:
    def __enter__(self):
        self.t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t


def this_command() -> str:
    """The command line of the running benchmark, as RESULTS.md quotes it."""
    args = shlex.join(sys.argv[1:])
    script = Path(sys.argv[0]).resolve()
    root = Path(__file__).resolve().parents[1]
    where = script.relative_to(root) if script.is_relative_to(root) else \
        Path("benchmarks") / script.name           # examples/... as well as benchmarks/...
    return f"FSTCHUNK_DATA=../shared/data python {where}" + (f" {args}" if args else "")


def write_section(key: str, body: str) -> None:
    """Replace (or append) the section ``key`` of benchmarks/RESULTS.md, headed by the
    command that produced it, the date and the machine."""
    command = this_command()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = (f"<!-- {key} -->\n## {key}\n\nCommand: `{command}`  \nDate: {stamp}  \n"
               f"Machine: {machine()}\n\n{body.strip()}\n<!-- /{key} -->\n")
    with open(RESULTS.with_suffix(".lock"), "w") as lock:   # benchmarks run side by side
        fcntl.flock(lock, fcntl.LOCK_EX)
        text = RESULTS.read_text() if RESULTS.exists() else \
            "# Benchmark results\n\nEach section is written by the script named in its command.\n\n"
        pat = re.compile(rf"<!-- {re.escape(key)} -->.*?<!-- /{re.escape(key)} -->\n", re.S)
        text = pat.sub(lambda m: section, text) if pat.search(text) else text + "\n" + section
        RESULTS.write_text(text)
    print(f"\n(wrote section '{key}' of {RESULTS})")


def decoder_for(name: str, **settings):
    """The registry's decoder ``name`` with those of ``settings`` it reads (a benchmark
    sweeps β and k over every decoder; the registry refuses a setting a decoder ignores)."""
    from fstchunk.decoding import decoders
    takes = decoders.REGISTRY[name].settings
    return decoders.decoder(name, **{k: v for k, v in settings.items() if k in takes})

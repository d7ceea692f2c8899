"""cProfile reports for the benchmark (``--profile``): one ``.pstats`` and one readable ``.txt`` per section."""

from __future__ import annotations

import cProfile
import io
import pstats

from scripts.bench_build import log


def profiled(args, name: str, fn):
    """Run ``fn`` under cProfile when --profile; writes <out>/profiles/<name>.{pstats,txt}."""
    if not args.profile:
        return fn()
    prof = cProfile.Profile()
    result = prof.runcall(fn)
    d = args.out / "profiles"
    d.mkdir(parents=True, exist_ok=True)
    prof.dump_stats(str(d / f"{name}.pstats"))
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf).strip_dirs()
    st.sort_stats("cumulative").print_stats(30)
    st.sort_stats("tottime").print_stats(25)
    (d / f"{name}.txt").write_text(buf.getvalue())
    log(f"  profile written: {d / (name + '.txt')}")
    return result

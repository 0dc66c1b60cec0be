#!/usr/bin/env python3
"""The moment of `acceval serve`'s drain, repeated (issue 27; docs/limits.md): start the
server of scripts/faults.py, send `acceval qps` at RATE req/s for 3 s, SIGTERM it 1.5 s in
with nothing held in flight, and count the requests lost, that is failures other than
`http_503` (turned away while draining) and `connection_failed` (refused at connect), while
two busy loops keep both cores loaded. Prints one line per shutdown and a total; exits 1
when any request was lost.

usage: scripts/drain_stress.py BIN SHUTDOWNS [RATE]
"""
import os
import subprocess
import sys
import time

bin_, shutdowns = sys.argv[1], int(sys.argv[2])
rate = float(sys.argv[3]) if len(sys.argv) > 3 else 150.0
# faults.py reads its binary and load time from argv when imported.
sys.argv = [sys.argv[0], bin_, "1"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults as F  # noqa: E402

busy = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
lost_total, kinds_total = 0, {}
work = os.environ.get("TMPDIR", "/tmp")
try:
    for i in range(shutdowns):
        p, addr, _ = F.start_server()
        out = os.path.join(work, f"drain-stress-{os.getpid()}-{i}.json")
        q = F.qps(addr, rate, 3, out, slo="p50<=10s")
        time.sleep(1.5)
        p.terminate()
        p.wait(timeout=20)
        q.wait(timeout=30)
        st = F.step_of(out)
        os.remove(out)
        fk = st.get("failures") or {}
        lost = sum(v for k, v in fk.items() if k not in ("http_503", "connection_failed"))
        lost_total += lost
        for k, v in fk.items():
            kinds_total[k] = kinds_total.get(k, 0) + v
        print(f"shutdown {i}: sent {st['sent']}, failures {fk}, lost {lost}", flush=True)
finally:
    for b in busy:
        b.kill()
print(f"TOTAL: {shutdowns} shutdowns, lost {lost_total}, failure kinds {kinds_total}")
sys.exit(1 if lost_total else 0)

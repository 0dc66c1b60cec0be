#!/usr/bin/env python3
"""Faults during load (issue 27, point 3): `acceval serve` held at a share of its measured max
QPS by `acceval qps` while hostile clients come and go, then SIGTERM in the middle of load.

Usage: scripts/faults.py [BIN (target/release/acceval)] [LOAD_S (300)]
  env: SHARE (0.5) of the measured max QPS; IDLE (5): serve --idle-timeout, s;
       DRAIN (10): serve --drain-timeout, s; MODEL (lstm-load-forecast).

During the load, in threads, over and over until it ends:
  mid-body      a request whose body stops half-way, then the client closes (FIN or RST)
  mid-response  a whole request, then the client resets the connection before the answer
  slow reader   requests pipelined on a socket with a 4 KiB receive buffer, read one byte a
                second: how long the server holds on once its writes stall (bound: IDLE)
Then (a second window of load) SIGTERM while 8 requests are admitted with half their body
sent: a new request must get 503, the 8 must get 200 once their bodies arrive, and the server
must exit within DRAIN. Last, a server whose admitted requests never finish must exit at DRAIN
and say how many it cut.

Prints one line per check, PASS or FAIL, and exits 1 when any fails."""
import json, os, socket, struct, subprocess, sys, tempfile, threading, time

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/acceval"
LOAD_S = int(sys.argv[2]) if len(sys.argv) > 2 else 300
SHARE = float(os.environ.get("SHARE", "0.5"))
IDLE = float(os.environ.get("IDLE", "5"))
DRAIN = float(os.environ.get("DRAIN", "10"))
MODEL = os.environ.get("MODEL", "lstm-load-forecast")
PATH = f"/v2/models/{MODEL}/infer"
BODY = ('{"inputs":[{"name":"series","shape":[1,96,8],"datatype":"FP32","data":[%s]}]}'
        % ",".join(["0.5"] * 768)).encode()
failures = []


def check(ok, what):
    print(f"{'PASS' if ok else 'FAIL'}: {what}", flush=True)
    if not ok:
        failures.append(what)


def request(close=True):
    conn = "Connection: close\r\n" if close else ""
    return (f"POST {PATH} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n{conn}"
            f"Content-Length: {len(BODY)}\r\n\r\n").encode() + BODY


def start_server():
    p = subprocess.Popen([BIN, "serve", "--model", MODEL, "--port", "0", "--idle-timeout", str(IDLE),
                          "--drain-timeout", str(DRAIN)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if "http://" not in line:
        sys.exit(f"serve did not start: {line}{p.stderr.read()}")
    host, port = line.split("http://")[1].split()[0].rsplit(":", 1)
    addr = (host.strip("[]"), int(port))
    err = []
    threading.Thread(target=lambda: p.stdout.read(), daemon=True).start()
    threading.Thread(target=lambda: err.extend(p.stderr), daemon=True).start()
    t = time.time()
    while time.time() - t < 120:
        if status_of(addr, b"GET /v2/health/ready HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n") == 200:
            return p, addr, err
        time.sleep(0.2)
    sys.exit("serve did not turn ready in 120 s")


def status_of(addr, data, timeout=10):
    """The HTTP status of one exchange on a fresh connection; None when refused or cut."""
    try:
        with socket.create_connection(addr, timeout=timeout) as s:
            s.sendall(data)
            got = b""
            while b"\r\n" not in got:
                b = s.recv(4096)
                if not b:
                    break
                got += b
            return int(got.split(b" ", 2)[1]) if got.startswith(b"HTTP/1.1 ") else None
    except OSError:
        return None


def rss_mib(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"):
            return int(l.split()[1]) / 1024
    return float("nan")


def url(addr):
    return f"http://{addr[0]}:{addr[1]}"


def qps(addr, rate, seconds, out, slo="p99<=10s"):
    return subprocess.Popen([BIN, "qps", "--url", url(addr), "--model", MODEL, "--start-rate", str(rate),
                             "--max-rate", str(rate), "--slo", slo, "--error-budget", "0.99",
                             "--step-duration", str(seconds), "--warmup-s", "0", "--json"],
                            stdout=open(out, "w"), stderr=subprocess.DEVNULL)


def step_of(path):
    with open(path) as f:
        return json.load(f)["steps"][0]


def rst(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def mid_body(addr, stop, n):
    half = request()[: len(request()) - len(BODY) // 2]
    while not stop.is_set():
        try:
            s = socket.create_connection(addr, timeout=5)
            s.sendall(half)
            time.sleep(0.05)
            rst(s) if n[0] % 2 else s.close()
            n[0] += 1
        except OSError:
            pass
        time.sleep(0.02)


def mid_response(addr, stop, n):
    while not stop.is_set():
        try:
            s = socket.create_connection(addr, timeout=5)
            s.sendall(request())
            rst(s)
            n[0] += 1
        except OSError:
            pass
        time.sleep(0.02)


def slow_reader(addr, stop, holds):
    """Pipelines requests on a socket that reads a byte a second; records how long after its
    last successful send the server let go (its writes stall once the buffers fill)."""
    while not stop.is_set():
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            s.connect(addr)
        except OSError:
            s.close()
            time.sleep(1)
            continue
        s.settimeout(0.2)
        last_send = time.time()
        req = request(close=False)
        gone = None
        t0 = time.time()
        while not stop.is_set() and time.time() - t0 < 10 * IDLE + 60:
            try:
                s.send(req)
                last_send = time.time()
                continue
            except socket.timeout:
                pass
            except OSError:
                gone = time.time()
                break
            try:
                if s.recv(1) == b"":
                    gone = time.time()
                    break
            except socket.timeout:
                pass
            except OSError:
                gone = time.time()
                break
            time.sleep(1)
        s.close()
        if gone is not None:
            holds.append(gone - last_send)


def main():
    work = tempfile.mkdtemp()
    p, addr, err = start_server()
    if os.environ.get("RATE"):
        mx, rate = "not measured (RATE given)", float(os.environ["RATE"])
    else:
        r = subprocess.run([BIN, "qps", "--url", url(addr), "--model", MODEL, "--slo", "p99<=100ms",
                            "--step-duration", "3", "--json"], capture_output=True, text=True)
        mx = json.loads(r.stdout)["max_qps"] or 0
        rate = round(SHARE * mx, 1)
    print(f"faults on {MODEL} at {url(addr)}: max QPS {mx} req/s, load held at {SHARE} of it = {rate} req/s "
          f"for {LOAD_S} s; serve --idle-timeout {IDLE} --drain-timeout {DRAIN}", flush=True)
    stop = threading.Event()
    nb, nr, holds = [0], [0], []
    threads = [threading.Thread(target=mid_body, args=(addr, stop, nb)),
               threading.Thread(target=mid_response, args=(addr, stop, nr)),
               threading.Thread(target=slow_reader, args=(addr, stop, holds))]
    for t in threads:
        t.start()
    # Warm-up under the same faults; memory is compared from its end.
    qps(addr, rate, 10, f"{work}/warmup.json", slo="p50<=10s").wait()
    rss0 = rss_mib(p.pid)
    load = qps(addr, rate, LOAD_S, f"{work}/load.json")
    load.wait()
    stop.set()
    for t in threads:
        t.join()
    st = step_of(f"{work}/load.json")
    kinds = ", ".join(f"{k}: {v}" for k, v in (st.get("failures") or {}).items()) or "none"
    check(p.poll() is None, "the server is still running after the faults")
    check(st["failed"] == 0 and st["sent"] > 0,
          f"load: {st['sent']} sent, {st['failed']} failed ({kinds}), achieved {st['achieved_rps']} req/s, "
          f"p99 {(st.get('latency_ms') or {}).get('p99')} ms, while {nb[0]} clients left mid-body and {nr[0]} reset before the answer")
    check(bool(holds) and max(holds) <= IDLE + 3,
          f"slow readers: {len(holds)} cut, held {min(holds or [0]):.1f}-{max(holds or [0]):.1f} s after their writes stalled "
          f"(bound: --idle-timeout {IDLE} s + 3 s)")
    rss1 = rss_mib(p.pid)
    check(rss1 <= rss0 * 1.05, f"server RSS {rss0:.1f} MiB after a 10 s warm-up under the same faults, {rss1:.1f} MiB "
          f"at the end: {(rss1 - rss0) / rss0 * 100:+.2f} % (at most +5 %)")
    check(status_of(addr, request()) == 200, "a plain request after the faults gets 200")

    # SIGTERM during load: 8 admitted requests with half a body, and load at the same rate.
    head = request()[: len(request()) - len(BODY) // 2]
    rest = request()[len(head):]
    held = []
    for _ in range(8):
        s = socket.create_connection(addr, timeout=DRAIN + 5)
        s.sendall(head)
        held.append(s)
    # p50: the step ends at its time (a p99 step would go on until it has 100s of samples).
    load = qps(addr, rate, 4, f"{work}/drain.json", slo="p50<=10s")
    time.sleep(2)
    t_term = time.time()
    p.terminate()
    time.sleep(0.3)
    new = status_of(addr, request())
    check(new == 503, f"a new request after SIGTERM gets {new} (503 expected: the 8 keep the drain open)")
    codes = []
    for s in held:
        s.sendall(rest)
        got = b""
        try:
            while b"\r\n" not in got:
                b = s.recv(4096)
                if not b:
                    break
                got += b
        except OSError:
            pass
        codes.append(got.split(b" ", 2)[1].decode() if got.startswith(b"HTTP/1.1 ") else "none")
        s.close()
    check(all(c == "200" for c in codes), f"the 8 requests admitted before SIGTERM: {' '.join(codes)} (all 200 expected)")
    try:
        p.wait(timeout=DRAIN + 5)
    except subprocess.TimeoutExpired:
        pass
    took = time.time() - t_term
    check(p.poll() is not None and took <= DRAIN + 1,
          f"the server exited {took:.2f} s after SIGTERM, exit {p.poll()} (bound: --drain-timeout {DRAIN} s + 1 s)")
    load.wait()
    st = step_of(f"{work}/drain.json")
    fk = st.get("failures") or {}
    kinds = ", ".join(f"{k}: {v}" for k, v in fk.items()) or "none"
    lost = sum(v for k, v in fk.items() if k not in ("http_503", "connection_failed"))
    check(lost == 0, f"load across the SIGTERM: {st['sent']} sent, {st['sent'] - st['failed']} answered 200, "
          f"{st['failed']} refused ({kinds}); lost (cut without an answer): {lost}")
    print(f"  server said: {' | '.join(l.strip() for l in err if 'drain' in l)}", flush=True)

    # A drain that runs out: 4 admitted requests never finish their bodies.
    p, addr, err = start_server()
    held = []
    for _ in range(4):
        s = socket.create_connection(addr)
        s.sendall(head)
        held.append(s)
    time.sleep(0.5)
    t_term = time.time()
    p.terminate()
    try:
        p.wait(timeout=DRAIN + 5)
    except subprocess.TimeoutExpired:
        p.kill()
    took = time.time() - t_term
    time.sleep(0.2)
    said = " | ".join(l.strip() for l in err if "drained" in l)
    check(DRAIN - 0.5 <= took <= DRAIN + 1 and "cut at the drain deadline: 4" in said,
          f"4 requests that never finish: exit after {took:.2f} s (drain {DRAIN} s); stderr: {said}")
    for s in held:
        s.close()
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

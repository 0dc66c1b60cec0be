#!/usr/bin/env python3
"""Probes a running-from-scratch `acceval serve` the way a hostile client would and prints one
line per case: what the server did and how long it took (issue 16, the server part).

Usage: scripts/serve_hostile_probe.py [path/to/acceval] [extra serve flags...]
Starts `acceval serve --model lstm-load-forecast --port 0` with the given flags, then:
a huge declared Content-Length, slowloris connections, an idle connection (fresh and after a
request), a stalled body, a chunked body over the limit, a 60 MB JSON body (peak RSS of the
server from /proc/PID/status), FP32 overflow, a duplicated input name. Timings are capped
(see CAP_S); "open at cap" means the server never answered or closed.
Also checks the CLI: --max-body-mb NaN and binding every interface (--host 0.0.0.0)."""
import json, os, socket, subprocess, sys, threading, time

EXE = sys.argv[1] if len(sys.argv) > 1 else "target/debug/acceval"
EXTRA = sys.argv[2:]
CAP_S = float(os.environ.get("PROBE_CAP_S", "90"))
PATH = "/v2/models/lstm-load-forecast/infer"


def start(extra):
    p = subprocess.Popen([EXE, "serve", "--model", "lstm-load-forecast", "--port", "0", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    addr = line.split("http://")[1].split()[0]
    host, port = addr.rsplit(":", 1)
    threading.Thread(target=lambda: p.stdout.read(), daemon=True).start()
    err = []
    threading.Thread(target=lambda: err.extend(p.stderr), daemon=True).start()
    t = time.time()
    while time.time() - t < 120:
        try:
            if b" 200 " in exchange(host, int(port), b"GET /v2/health/ready HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 5)[0]:
                break
        except OSError:
            pass
        time.sleep(0.2)
    return p, (host.strip("[]"), int(port)), err


def exchange(host, port, data, cap):
    """Sends data; returns (bytes received until close or cap, seconds, closed)."""
    s = socket.create_connection((host, port))
    s.settimeout(cap)
    t = time.time()
    try:
        s.sendall(data)
    except OSError:
        pass  # the server answered (413) and closed before taking it all: read that answer
    got = b""
    closed = False
    try:
        while True:
            b = s.recv(65536)
            if not b:
                closed = True
                break
            got += b
    except (socket.timeout, ConnectionResetError) as e:
        closed = isinstance(e, ConnectionResetError)
    s.close()
    return got, time.time() - t, closed


def status(got):
    return got.split(b"\r\n", 1)[0].decode(errors="replace") if got else "no answer"


def wait_closed(s, cap):
    s.settimeout(cap)
    t = time.time()
    try:
        while s.recv(65536):
            pass
        return time.time() - t
    except ConnectionResetError:
        return time.time() - t
    except socket.timeout:
        return None


def fmt(dt):
    return f"{dt:.1f} s" if dt is not None else f"open at {CAP_S:.0f} s"


def vm_hwm(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmHWM"):
            return int(l.split()[1]) / 1024
    return 0.0


def main():
    p, (h, port), err = start(EXTRA)
    a = (h, port)
    out = []
    # 1. A declared Content-Length of 10^15 with a 2-byte body.
    got, dt, closed = exchange(h, port, f"POST {PATH} HTTP/1.1\r\nHost: a\r\nContent-Length: {10**15}\r\n\r\n{{}}".encode(), min(CAP_S, 15))
    out.append(("Content-Length 10^15, 2-byte body", f"{status(got)} after {dt:.2f} s" if got else f"no answer in {dt:.0f} s"))
    # 2. 300 slowloris connections: a header byte every 5 s.
    socks = []
    for _ in range(300):
        try:
            s = socket.create_connection(a)
            s.sendall(f"POST {PATH} HTTP/1.1\r\nHost: a\r\n".encode())
            socks.append(s)
        except OSError:
            break
    t = time.time()
    open_ = list(socks)
    while open_ and time.time() - t < CAP_S:
        still = []
        for s in open_:
            try:
                s.sendall(b"X")
                s.setblocking(False)
                try:
                    if s.recv(1) == b"":
                        s.close(); continue
                except BlockingIOError:
                    pass
                s.setblocking(True)
                still.append(s)
            except OSError:
                s.close()
        open_ = still
        if open_:
            time.sleep(1)
    dt = time.time() - t
    out.append((f"{len(socks)} slowloris connections", f"{len(open_)} open at {CAP_S:.0f} s" if open_ else f"all closed after {dt:.0f} s"))
    for s in open_:
        s.close()
    # 3. An idle fresh connection, and one idle after a keep-alive request.
    s = socket.create_connection(a)
    out.append(("idle connection (no bytes)", fmt(wait_closed(s, CAP_S))))
    s = socket.create_connection(a)
    s.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: a\r\n\r\n")
    time.sleep(0.3)
    s.recv(65536)
    out.append(("idle keep-alive connection after a request", fmt(wait_closed(s, CAP_S))))
    # 4. A stalled body: Content-Length 1000, 10 bytes sent.
    got, dt, closed = exchange(h, port, f"POST {PATH} HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n0123456789".encode(), CAP_S)
    out.append(("stalled body (10 of 1000 bytes)", f"{status(got)} after {dt:.1f} s" if got else f"{'closed' if closed else 'open'} after {dt:.1f} s"))
    # 5. A chunked body over the limit (default 64 MB): 1 MB chunks.
    s = socket.create_connection(a)
    s.settimeout(30)
    s.sendall(f"POST {PATH} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
    chunk = b"100000\r\n" + b" " * 0x100000 + b"\r\n"
    sent = 0
    t = time.time()
    try:
        for _ in range(200):
            s.sendall(chunk)
            sent += 1
    except OSError:
        pass
    try:
        got = s.recv(65536)
    except OSError:
        got = b""
    out.append(("chunked body, 1 MB chunks past the limit", f"{status(got)} after {sent} MB sent, {time.time()-t:.1f} s"))
    s.close()
    # 6. A 60 MB JSON body (valid JSON, wrong shape): peak RSS of the server.
    n = 6_000_000
    body = ('{"inputs":[{"name":"series","shape":[%d],"datatype":"FP32","data":[' % n).encode() + b",".join([b"0.123456789"] * n) + b"]}]}"
    before = vm_hwm(p.pid)
    got, dt, _ = exchange(h, port, f"POST {PATH} HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body, 60)
    out.append((f"{len(body)/1e6:.0f} MB JSON body", f"{status(got)}, peak RSS {vm_hwm(p.pid):.0f} MB (before {before:.0f} MB)"))
    # 7. FP32 overflow and a duplicated input.
    for what, b in [("FP32 1e39", '{"inputs":[{"name":"series","shape":[1,96,8],"datatype":"FP32","data":[1e39%s]}]}' % (",0" * 767)),
                    ("duplicated input name", '{"inputs":[{"name":"series","shape":[1,96,8],"datatype":"FP32","data":[%s]},{"name":"series","shape":[1],"datatype":"FP32","data":[1]}]}' % ",".join(["0"] * 768))]:
        got, dt, _ = exchange(h, port, f"POST {PATH} HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: {len(b)}\r\n\r\n{b}".encode(), 15)
        body = got.split(b"\r\n\r\n", 1)[-1][:160].decode(errors="replace")
        out.append((what, f"{status(got)} {body}"))
    p.terminate(); p.wait()
    # 8. The CLI.
    r = subprocess.run([EXE, "serve", "--model", "lstm-load-forecast", "--max-body-mb", "NaN"], capture_output=True, text=True)
    out.append(("--max-body-mb NaN", f"exit {r.returncode}: {r.stderr.strip().splitlines()[0] if r.stderr.strip() else ''}"))
    for host in ["0", "0.0.0.0", "::"]:
        q, _, err = start(["--host", host, *EXTRA])
        time.sleep(0.5)
        q.terminate(); q.wait()
        warn = [l.strip() for l in err if "warning" in l.lower()]
        out.append((f"--host {host}", warn[0][:200] if warn else "no warning"))
    for k, v in out:
        print(f"{k:45} | {v}")


if __name__ == "__main__":
    main()

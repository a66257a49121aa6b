#!/usr/bin/env python3
"""2,000 idle or dripping connections against an HTTP server on 127.0.0.1, while one client
asks for a path on fresh connections: prints the median, p99 and max latency of those requests,
how many failed, and (given the server's pid) the most descriptors it held.

usage: http_idle.py URL [PID]   (URL like http://127.0.0.1:8080/.well-known/agent-skills/index.json)
The attacking connections come from 127.0.0.2 and 127.0.0.3 (all of 127/8 is loopback on Linux);
the measured client from 127.0.0.1. Needs an open-file limit above 2,100."""
import os, resource, socket, sys, threading, time
from urllib.parse import urlsplit

ATTACKERS, REQUESTS = 2000, 300
url = urlsplit(sys.argv[1]); pid = sys.argv[2] if len(sys.argv) > 2 else None
addr = (url.hostname, url.port or 80)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, ATTACKERS + 512)), hard))
stop = threading.Event()
drip = b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 4000

def attacker(ip):
    socks = []
    def connect():
        s = socket.socket(); s.setblocking(True); s.settimeout(2)
        s.bind((ip, 0))
        try:
            s.connect(addr); s.setblocking(False); return s
        except OSError:
            s.close(); return None
    for _ in range(ATTACKERS // 2):
        s = connect()
        socks.append([s, 0])
    i = 0
    while not stop.is_set():
        for entry in socks:
            s = entry[0]
            if s is None:
                entry[0] = connect(); entry[1] = 0; continue
            try:
                if s.recv(4096) == b"":
                    raise OSError("closed")
            except BlockingIOError:
                pass
            except OSError:
                s.close(); entry[0] = None; continue
            if id(entry) % 2 == 0 and entry[1] < len(drip):  # half of them drip a byte a round
                try:
                    s.send(drip[entry[1]:entry[1] + 1]); entry[1] += 1
                except OSError:
                    s.close(); entry[0] = None
        time.sleep(0.3)
    for s, _ in socks:
        if s is not None:
            s.close()

fds = [0]
def sample():
    while pid and not stop.is_set():
        try:
            fds[0] = max(fds[0], len(os.listdir(f"/proc/{pid}/fd")))
        except OSError:
            pass
        time.sleep(0.02)

threads = [threading.Thread(target=attacker, args=(ip,)) for ip in ("127.0.0.2", "127.0.0.3")]
threads.append(threading.Thread(target=sample))
for t in threads:
    t.start()
time.sleep(3)
path = url.path or "/"
request = f"GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode()
times, failed = [], 0
for _ in range(REQUESTS):
    t0 = time.perf_counter()
    try:
        s = socket.create_connection(addr, timeout=10, source_address=("127.0.0.1", 0))
        s.sendall(request)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        if not data.startswith(b"HTTP/1.1 200"):
            failed += 1
    except OSError:
        failed += 1
    times.append(time.perf_counter() - t0)
    time.sleep(0.005)
stop.set()
for t in threads:
    t.join()
times.sort()
ms = lambda x: f"{x * 1000:.1f} ms"
print(f"{REQUESTS} requests under {ATTACKERS} idle/dripping connections: median {ms(times[len(times) // 2])}, "
      f"p99 {ms(times[len(times) * 99 // 100])}, max {ms(times[-1])}, failed {failed}"
      + (f", server descriptors at most {fds[0]}" if pid else ""))

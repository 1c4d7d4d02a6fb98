"""UDP echo for isolation tests: run inside vehicle i's namespace, it
echoes every datagram it receives on port 7000 and sends a numbered probe
to its peer every 0.2 s, counting the echoes that come back. On SIGTERM it
prints its counts and exits 0. With --ready FILE it appends a line to FILE
once its socket is bound (tests wait for it instead of guessing how long a
start takes)."""
import argparse
import select
import signal
import socket
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--ip", required=True)
ap.add_argument("--peer", required=True)
ap.add_argument("--crash-after", type=float, default=0, help="exit 1 after this many seconds (fault tests)")
ap.add_argument("--ready", help="append a line to this file once listening")
a = ap.parse_args()

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind((a.ip, 7000))
if a.ready:
    with open(a.ready, "a") as f:
        f.write("ready\n")
sent = echoed = replies = 0
start = time.monotonic()


def done(*_):
    print("sent %d replies %d echoed %d" % (sent, replies, echoed), flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, done)
next_probe = time.monotonic()
while True:
    if a.crash_after and time.monotonic() - start > a.crash_after:
        print("crashing on purpose", file=sys.stderr, flush=True)
        sys.exit(1)
    now = time.monotonic()
    if now >= next_probe:
        sock.sendto(b"probe %d from %s" % (sent, a.ip.encode()), (a.peer, 7000))
        sent += 1
        next_probe = now + 0.2
    r, _, _ = select.select([sock], [], [], max(0.0, next_probe - time.monotonic()))
    if r:
        data, src = sock.recvfrom(2048)
        if data.startswith(b"probe"):
            sock.sendto(b"echo" + data[5:], src)
            echoed += 1
        elif data.startswith(b"echo"):
            replies += 1

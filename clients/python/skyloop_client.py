"""skyloop external-agent client for Python (standard library only).

A program using it is a skyloop agent in its own process, stepping in
lockstep with the simulation (protocol: docs/protocol.md). It reads like a
sequential mission script: time() is simulated time; sleep() and recv()
wait in simulated time; send(), broadcast() and the vehicle commands take
effect at the current simulated time, exactly like a built-in agent's.

    from skyloop_client import connect

    uav = connect()                 # reads SKYLOOP_* from the environment
    uav.takeoff(5)
    while uav.telemetry().pos[2] < 4.8:
        uav.sleep(0.1)
    uav.goto(10, 0, 5)
    ...

skyloop launches the process with SKYLOOP_SOCKET (a Unix socket),
SKYLOOP_ADDR (TCP on loopback), SKYLOOP_TOKEN and SKYLOOP_VEHICLE set; a
process started by hand passes them to connect(). A process on another host
connects to the address skyloop run --listen (or skyloop relay) printed,
with the token and the certificate fingerprint (fingerprint=... or
SKYLOOP_FINGERPRINT): the connection is TLS, and the server's certificate
must have exactly that fingerprint. When the run ends, every blocking call
raises Ended.
"""

import base64
import hashlib
import json
import os
import socket
import ssl
import struct
from collections import namedtuple

VERSION = 1
MAX_FRAME = 1 << 20
_FOREVER = (1 << 63) - 1

Telemetry = namedtuple("Telemetry", "pos vel yaw mode armed landed battery")
Telemetry.__doc__ = """Vehicle state as its autopilot estimates it: pos and vel are
(x east, y north, z up) in m and m/s, yaw in rad counter-clockwise from east."""

Message = namedtuple("Message", "src dst port kind seq t_send t_arrive size payload")
Message.__doc__ = """A delivered packet; times in seconds, payload as bytes."""


class Ended(Exception):
    """The run is over (or the agent was refused)."""


class ProtocolError(Exception):
    """skyloop sent something this client does not understand."""


class Agent:
    """One agent stepping one node of the run."""

    def __init__(self, vehicle=None, socket_path=None, addr=None, token=None, name=None, fingerprint=None):
        if socket_path is None and addr is None:
            socket_path = os.environ.get("SKYLOOP_SOCKET")
            addr = os.environ.get("SKYLOOP_ADDR")
        if fingerprint is None:
            fingerprint = os.environ.get("SKYLOOP_FINGERPRINT") or None
        if token is None:
            token = os.environ.get("SKYLOOP_TOKEN", "")
        if vehicle is None:
            vehicle = int(os.environ["SKYLOOP_VEHICLE"])
        self.id = int(vehicle)
        if socket_path:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock.connect(socket_path)
        elif addr:
            host, port = addr.rsplit(":", 1)
            host = host.strip("[]")
            if fingerprint is None and not _loopback(host):
                raise ValueError("%s is not a loopback address: pass the certificate fingerprint skyloop printed "
                                 "(fingerprint=... or SKYLOOP_FINGERPRINT)" % addr)
            self._sock = socket.create_connection((host, int(port)))
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if fingerprint is not None:
                self._sock = _pinned_tls(self._sock, fingerprint, addr)
        else:
            raise ValueError("no socket or address: set SKYLOOP_SOCKET or SKYLOOP_ADDR, or pass one")
        self._rfile = self._sock.makefile("rb")
        self._out = []
        self._now = 0
        self._tel = None
        self._inbox = []
        self.ended = False
        self._write({"type": "hello", "version": VERSION, "token": token, "vehicles": [self.id],
                     "name": name or "python agent %d" % self.id}, flush=True)
        welcome = self._read()
        if welcome.get("type") != "welcome":
            raise ProtocolError("expected a welcome, got %r" % welcome.get("type"))
        self.tick = welcome["tick_ns"] / 1e9
        self.nodes = welcome.get("nodes", [])
        self.origin = welcome.get("origin")
        self._wait_tick()

    # --- framing -----------------------------------------------------
    def _write(self, frame, flush=False):
        # Frames of a step are sent together with its END-TICK: one system
        # call per step instead of one per frame.
        body = json.dumps(frame, separators=(",", ":")).encode()
        if len(body) > MAX_FRAME:
            raise ValueError("frame of %d bytes exceeds the 1 MiB limit" % len(body))
        self._out.append(struct.pack(">I", len(body)))
        self._out.append(body)
        if flush:
            self._sock.sendall(b"".join(self._out))
            self._out = []

    def _read(self):
        hdr = self._rfile.read(4)
        if len(hdr) < 4:
            self.ended = True
            raise Ended("connection closed by skyloop")
        (n,) = struct.unpack(">I", hdr)
        if n > MAX_FRAME:
            raise ProtocolError("frame of %d bytes exceeds the 1 MiB limit" % n)
        body = self._rfile.read(n)
        if len(body) < n:
            self.ended = True
            raise Ended("connection closed by skyloop")
        f = json.loads(body)
        if f.get("type") == "end":
            self.ended = True
            raise Ended(f.get("reason", "the run is over"))
        if f.get("type") == "error":
            self.ended = True
            raise Ended("skyloop refused the agent: " + f.get("reason", ""))
        return f

    def _wait_tick(self):
        while True:
            f = self._read()
            if f.get("type") == "tick" and f.get("vehicle", 0) == self.id:
                self._now = f.get("t", 0)
                t = f.get("telemetry")
                self._tel = None if t is None else Telemetry(
                    tuple(t["pos"]), tuple(t["vel"]), t["yaw"], t["mode"], t["armed"], t["landed"], t.get("battery", 0.0))
                for d in f.get("deliveries") or []:
                    self._inbox.append(Message(d["src"], d["dst"], d["port"], d["kind"], d["seq"], d["t_send"] / 1e9,
                                               d["t_arrive"] / 1e9, d["size"], base64.b64decode(d.get("payload") or "")))
                return

    def _end(self, wake_at_ns, on_recv):
        if self.ended:
            raise Ended("the run is over")
        self._write({"type": "done", "vehicle": self.id, "wake_at": wake_at_ns, "wake_on_recv": on_recv}, flush=True)
        self._wait_tick()

    # --- time --------------------------------------------------------
    def time(self):
        """Simulated time in seconds."""
        return self._now / 1e9

    def sleep(self, seconds):
        """End this step and resume `seconds` of simulated time later
        (at the next step when seconds <= 0). Messages wait in the inbox."""
        at = self._now + int(round(seconds * 1e9)) if seconds > 0 else 0
        self._end(at, False)

    def step(self):
        """End this step and resume at the agent's next one."""
        self._end(0, False)

    # --- network -----------------------------------------------------
    def send(self, dst, data, port=0, kind=None, delay=0.0):
        """Hand `data` (bytes) to the network for node `dst` now, or
        `delay` seconds into the current tick (0 <= delay < tick): sub-tick
        send times spread agents that step together."""
        f = {"type": "send", "vehicle": self.id, "dst": int(dst), "port": port,
             "payload": base64.b64encode(bytes(data)).decode()}
        if kind:
            f["kind"] = kind
        if delay:
            f["at"] = self._now + int(round(delay * 1e9))
        self._write(f)

    def broadcast(self, data, port=0, kind=None, delay=0.0):
        """Send `data` to every node in range (see send)."""
        self.send(-1, data, port, kind, delay)

    def recv(self, timeout=None):
        """The next delivered message, waiting in simulated time for one;
        None when `timeout` simulated seconds pass first."""
        deadline = None if timeout is None else self._now + int(round(timeout * 1e9))
        while not self._inbox:
            if deadline is not None and self._now >= deadline:
                return None
            self._end(_FOREVER if deadline is None else deadline, True)
        return self._inbox.pop(0)

    def inbox(self):
        """Every message delivered so far, without waiting."""
        msgs, self._inbox = self._inbox, []
        return msgs

    def event(self, name, detail=""):
        """Write a line to the run's events.csv."""
        self._write({"type": "event", "vehicle": self.id, "name": name, "detail": detail})

    # --- vehicle -----------------------------------------------------
    def telemetry(self):
        """The vehicle's state at this step (None on a fixed node)."""
        return self._tel

    def _cmd(self, **f):
        f.update({"type": "command", "vehicle": self.id})
        self._write(f)

    def arm(self):
        self._cmd(cmd="arm")

    def disarm(self):
        self._cmd(cmd="disarm")

    def takeoff(self, alt):
        """Climb to `alt` m above the ground, arming if needed."""
        self._cmd(cmd="takeoff", alt=float(alt))

    def goto(self, x, y, z, speed=0.0):
        """Fly to (x east, y north, z up), at most `speed` m/s if > 0."""
        self._cmd(cmd="goto", pos=[float(x), float(y), float(z)], speed=float(speed))

    def velocity(self, vx, vy, vz):
        """Follow a world-frame velocity setpoint (m/s)."""
        self._cmd(cmd="velocity", vel=[float(vx), float(vy), float(vz)])

    def hold(self):
        self._cmd(cmd="hold")

    def land(self):
        self._cmd(cmd="land")

    def rtl(self):
        self._cmd(cmd="rtl")

    @property
    def vehicle(self):
        """The agent itself, so that scripts may write agent.vehicle.takeoff(5)."""
        return self

    def close(self):
        try:
            if self._out:
                self._sock.sendall(b"".join(self._out))
        except OSError:
            pass
        self._sock.close()


def _loopback(host):
    if host == "localhost":
        return True
    try:
        import ipaddress
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _pinned_tls(sock, fingerprint, addr):
    """Wraps sock in TLS and checks that the server's certificate is the
    one with this fingerprint (a run's self-signed certificate)."""
    want = fingerprint.strip().lower()
    if want.startswith("sha256:"):
        want = want[len("sha256:"):]
    want = want.replace(":", "")
    if len(want) != 64 or any(c not in "0123456789abcdef" for c in want):
        raise ValueError("certificate fingerprint %r: want sha256: and 64 hex digits, as skyloop prints it" % fingerprint)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    # Checked below against the pinned fingerprint, not against authorities.
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    tls = ctx.wrap_socket(sock)
    got = hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()
    if got != want:
        tls.close()
        raise ConnectionError("%s: the server's certificate is sha256:%s, not the sha256:%s given: wrong address, "
                              "an older run, or someone in between" % (addr, got, want))
    return tls


def connect(**kw):
    """Connect as the agent skyloop launched this process for (see Agent)."""
    return Agent(**kw)


def run(main, **kw):
    """Connect, call main(agent), and return quietly when the run ends."""
    agent = connect(**kw)
    try:
        main(agent)
        while True:  # the mission is over: keep stepping until the run ends
            agent.sleep(3600)
    except Ended:
        pass
    finally:
        agent.close()

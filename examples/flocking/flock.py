"""Reynolds flocking for one UAV, as a skyloop external agent.

Each UAV broadcasts its position and velocity at 10 Hz over the simulated
network and steers by what it has heard of the others:
  separation  - away from neighbours closer than SEP_RADIUS,
  alignment   - towards the neighbours' mean velocity,
  cohesion    - towards the neighbours' centroid,
plus a migration term that leads the flock around a circle. Altitude is
held with a P term. Beliefs older than STALE seconds are dropped, so lost
packets show up as a looser flock.

    python3 flock.py --id 3        (skyloop starts it; see flocking.yaml)
"""
import argparse
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from skyloop_client import connect, Ended  # noqa: E402

STATE = struct.Struct("<I6d")  # id, x, y, z, vx, vy, vz
PERIOD = 0.1                   # s between steps
ALT = 10.0                     # cruise altitude, m
NEIGHBOUR_RADIUS = 25.0        # m
SEP_RADIUS = 4.0               # m
W_SEP, W_ALI, W_COH, W_MIG = 1.5, 0.6, 0.25, 0.5
MAX_SPEED = 4.0                # m/s
STALE = 1.0                    # s
CENTRE, RADIUS = (0.0, 0.0), 30.0   # migration circle
LAND_AT = 55.0                 # s


def clamp_norm(vx, vy, lim):
    n = math.hypot(vx, vy)
    return (vx * lim / n, vy * lim / n) if n > lim else (vx, vy)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--id", type=int, required=True, help="the node id skyloop passes as {id}")
    args = ap.parse_args()
    uav = connect(vehicle=args.id)
    heard = {}  # id -> (t, x, y, z, vx, vy, vz)
    try:
        # Stagger the agents by 9 ms each, so that their broadcasts do not
        # start at the same instant (an 802.11 radio cannot hear while it
        # transmits, and ten 0.2 ms frames do not fit in one 1 ms tick).
        uav.sleep(0.009 * args.id)
        uav.takeoff(ALT)
        while uav.telemetry().pos[2] < ALT - 1:
            uav.sleep(PERIOD)
        uav.event("flocking", "airborne at %.1f s" % uav.time())
        while uav.time() < LAND_AT:
            now = uav.time()
            tel = uav.telemetry()
            x, y, z = tel.pos
            vx, vy, _ = tel.vel
            uav.broadcast(STATE.pack(args.id, x, y, z, vx, vy, tel.vel[2]), kind="state")
            for m in uav.inbox():
                if len(m.payload) == STATE.size:
                    i, *s = STATE.unpack(m.payload)
                    heard[i] = (m.t_arrive, *s)
            nb = [s for i, s in sorted(heard.items())
                  if i != args.id and now - s[0] <= STALE and math.hypot(s[1] - x, s[2] - y) < NEIGHBOUR_RADIUS]
            sep = [0.0, 0.0]
            ali = [0.0, 0.0]
            coh = [0.0, 0.0]
            for _, nx, ny, _, nvx, nvy, _ in nb:
                dx, dy = x - nx, y - ny
                d = math.hypot(dx, dy)
                if 1e-6 < d < SEP_RADIUS:
                    sep[0] += dx / d * (SEP_RADIUS - d) / SEP_RADIUS
                    sep[1] += dy / d * (SEP_RADIUS - d) / SEP_RADIUS
                ali[0] += nvx
                ali[1] += nvy
                coh[0] += nx
                coh[1] += ny
            if nb:
                ali = [ali[0] / len(nb) - vx, ali[1] / len(nb) - vy]
                coh = [coh[0] / len(nb) - x, coh[1] / len(nb) - y]
            # Migration: fly counter-clockwise around the circle.
            rx, ry = x - CENTRE[0], y - CENTRE[1]
            r = math.hypot(rx, ry) or 1.0
            tang = (-ry / r, rx / r)
            radial = (RADIUS - r) / RADIUS
            mig = (tang[0] * MAX_SPEED + rx / r * radial * MAX_SPEED, tang[1] * MAX_SPEED + ry / r * radial * MAX_SPEED)
            ax = W_SEP * sep[0] * MAX_SPEED + W_ALI * ali[0] + W_COH * coh[0] + W_MIG * (mig[0] - vx)
            ay = W_SEP * sep[1] * MAX_SPEED + W_ALI * ali[1] + W_COH * coh[1] + W_MIG * (mig[1] - vy)
            cvx, cvy = clamp_norm(vx + ax, vy + ay, MAX_SPEED)
            uav.velocity(cvx, cvy, 0.8 * (ALT - z))
            uav.sleep(PERIOD)
        uav.land()
        uav.event("flocking", "landing at %.1f s with %d neighbours in view" % (uav.time(), len(nb)))
        while True:
            uav.sleep(3600)
    except Ended:
        pass


if __name__ == "__main__":
    main()

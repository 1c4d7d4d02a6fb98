"""Flies one UAV with the Python client: take off, go to a point, land."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from skyloop_client import run  # noqa: E402


def mission(uav):
    uav.event("py_start", "t=%.3f" % uav.time())
    uav.vehicle.takeoff(5)
    while uav.telemetry().pos[2] < 4.8:
        uav.sleep(0.1)
    uav.event("py_airborne", "z=%.2f" % uav.telemetry().pos[2])
    uav.vehicle.goto(10, 0, 5)
    while True:
        x, y, z = uav.telemetry().pos
        if abs(x - 10) < 0.3 and abs(y) < 0.3:
            break
        uav.sleep(0.1)
    uav.event("py_arrived", "x=%.2f" % uav.telemetry().pos[0])
    uav.vehicle.land()
    while not (uav.telemetry().landed and not uav.telemetry().armed):
        uav.sleep(0.2)
    uav.event("py_landed", "t=%.3f" % uav.time())


run(mission)

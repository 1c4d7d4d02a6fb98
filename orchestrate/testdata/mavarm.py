#!/usr/bin/env python3
"""Companion-computer test program: inside a vehicle's namespace, listen
for the autopilot's MAVLink 2 heartbeat on UDP 14540 (PX4's onboard port),
arm the vehicle with COMMAND_LONG and wait for COMMAND_ACK. Standard
library only; the frames are built by hand. With --ready FILE it appends a
line to FILE once its socket is bound."""
import argparse
import socket
import struct
import sys
import time

HEARTBEAT, COMMAND_LONG, COMMAND_ACK = 0, 76, 77
CRC_EXTRA = {COMMAND_LONG: 152}
ARM_DISARM = 400


def x25(data, crc=0xFFFF):
    for b in data:
        t = (b ^ crc) & 0xFF
        t = (t ^ (t << 4)) & 0xFF
        crc = ((crc >> 8) ^ (t << 8) ^ (t << 3) ^ (t >> 4)) & 0xFFFF
    return crc


def frame(seq, msgid, payload, sysid=245, compid=191):
    hdr = bytes([len(payload), 0, 0, seq & 0xFF, sysid, compid]) + msgid.to_bytes(3, "little")
    crc = x25(hdr + payload + bytes([CRC_EXTRA[msgid]]))
    return b"\xfd" + hdr + payload + struct.pack("<H", crc)


def parse(data):
    if len(data) < 12 or data[0] != 0xFD:
        return None
    n = data[1]
    return data[5], int.from_bytes(data[7:10], "little"), data[10:10 + n]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sysid", type=int, required=True)
    ap.add_argument("--ready", help="append a line to this file once listening")
    args = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 14540))
    s.settimeout(1.0)
    if args.ready:
        with open(args.ready, "a") as f:
            f.write("ready\n")
    # Generous: the run itself ends the program if it outlasts it.
    deadline = time.time() + 600
    autopilot = None
    while autopilot is None and time.time() < deadline:
        try:
            data, addr = s.recvfrom(2048)
        except socket.timeout:
            continue
        m = parse(data)
        if m and m[0] == args.sysid and m[1] == HEARTBEAT:
            autopilot = addr
    if autopilot is None:
        print("no heartbeat from system", args.sysid)
        return 1
    print("heartbeat from system %d at %s:%d" % (args.sysid, autopilot[0], autopilot[1]), flush=True)
    seq = 0
    while time.time() < deadline:
        payload = struct.pack("<7fHBBB", 1, 0, 0, 0, 0, 0, 0, ARM_DISARM, args.sysid, 1, 0)
        s.sendto(frame(seq, COMMAND_LONG, payload), autopilot)
        seq += 1
        t_end = time.time() + 1
        while time.time() < t_end:
            try:
                data, _ = s.recvfrom(2048)
            except socket.timeout:
                break
            m = parse(data)
            if m and m[0] == args.sysid and m[1] == COMMAND_ACK:
                p = m[2] + bytes(3)
                cmd, result = struct.unpack("<HB", p[:3])
                if cmd == ARM_DISARM:
                    print("arm acknowledged, result %d" % result, flush=True)
                    return 0 if result == 0 else 2
    print("no acknowledgement")
    return 1


if __name__ == "__main__":
    sys.exit(main())

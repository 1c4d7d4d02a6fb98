"""An rclpy node that flies /<ns> around a 10 m square through skyloop's
ROS 2 bridge, in lockstep: it acknowledges every /clock on
/skyloop/ack/square after acting on it. Usage: python3 square.py NS"""
import sys

import rclpy
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float64

CORNERS = [(10.0, 0.0, 5.0), (10.0, 10.0, 5.0), (0.0, 10.0, 5.0), (0.0, 0.0, 5.0)]


class Square(Node):
    def __init__(self, ns):
        super().__init__("square")
        self.pos = None
        self.state, self.corner = "wait", 0
        self.create_subscription(PoseStamped, f"/{ns}/pose", self.on_pose, 10)
        self.create_subscription(Clock, "/clock", self.on_clock, 10)
        self.takeoff = self.create_publisher(Float64, f"/{ns}/takeoff", 10)
        self.goal = self.create_publisher(PoseStamped, f"/{ns}/goal_pose", 10)
        self.ack = self.create_publisher(Clock, "/skyloop/ack/square", 10)

    def on_pose(self, m):
        self.pos = m.pose.position

    def near(self, c):
        p = self.pos
        return p is not None and ((p.x - c[0]) ** 2 + (p.y - c[1]) ** 2 + (p.z - c[2]) ** 2) ** 0.5 < 0.5

    def send_goal(self):
        m = PoseStamped()
        m.header.frame_id = "map"
        m.pose.position.x, m.pose.position.y, m.pose.position.z = CORNERS[self.corner]
        m.pose.orientation.w = 1.0
        self.goal.publish(m)

    def on_clock(self, c):
        t = c.clock.sec + c.clock.nanosec * 1e-9
        if self.state == "wait" and t >= 1.0:
            self.takeoff.publish(Float64(data=5.0))
            self.state = "takeoff"
        elif self.state == "takeoff" and self.pos is not None and self.pos.z > 4.8:
            self.state = "square"
            self.send_goal()
        elif self.state == "square" and self.near(CORNERS[self.corner]):
            print(f"corner {self.corner} at {t:.2f}", flush=True)
            self.corner += 1
            if self.corner == len(CORNERS):
                self.state = "done"
                print(f"square done at {t:.2f}", flush=True)
            else:
                self.send_goal()
        self.ack.publish(c)


def main():
    rclpy.init()
    node = Square(sys.argv[1])
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass


if __name__ == "__main__":
    main()

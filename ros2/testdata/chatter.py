"""rclpy talker or listener on /chatter (std_msgs/String), as ROS 2's demo
nodes: python3 chatter.py talker|listener"""
import sys

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


def main():
    rclpy.init()
    role = sys.argv[1]
    node = Node(role)
    if role == "talker":
        pub = node.create_publisher(String, "/chatter", 10)
        count = [0]

        def tick():
            pub.publish(String(data=f"hello {count[0]}"))
            count[0] += 1
        node.create_timer(0.1, tick)
    else:
        node.create_subscription(String, "/chatter", lambda m: print("heard", m.data, flush=True), 10)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass


if __name__ == "__main__":
    main()

"""A person at libfprint's virtual fingerprint reader, through fprintd on the system bus.

Usage:
  finger.py enroll FINGER PRINT   enrolls FINGER for the calling user on fprintd's default
                                  reader, touching it with PRINT at every stage; prints the
                                  last EnrollStatus ("enroll-completed")
  finger.py delete                deletes every finger of the calling user, as fprintd-delete
                                  does; prints "deleted"
  finger.py touch SOCKET PRINT... waits until the reader needs a finger, touches it with the
                                  next PRINT (writes "SCAN PRINT" to the virtual device's
                                  SOCKET), and again for each PRINT; 60 s at most in all
"""
import socket
import sys
import time

from gi.repository import Gio, GLib

BUS_NAME = "net.reactivated.Fprint"


def default_device(bus):
    manager = Gio.DBusProxy.new_sync(
        bus, 0, None, BUS_NAME, "/net/reactivated/Fprint/Manager", "net.reactivated.Fprint.Manager", None)
    path = manager.call_sync("GetDefaultDevice", None, 0, -1, None).unpack()[0]
    return Gio.DBusProxy.new_sync(bus, 0, None, BUS_NAME, path, "net.reactivated.Fprint.Device", None)


def scan(path, print_id):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        connection.sendall(("SCAN " + print_id).encode())


def enroll(finger, print_id, socket_path):
    bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
    device = default_device(bus)
    statuses = []
    loop = GLib.MainLoop()

    def on_signal(_proxy, _sender, name, parameters):
        if name == "EnrollStatus":
            status, done = parameters.unpack()
            statuses.append(status)
            if done:
                loop.quit()

    device.connect("g-signal", on_signal)
    device.call_sync("Claim", GLib.Variant("(s)", ("",)), 0, -1, None)
    try:
        device.call_sync("EnrollStart", GLib.Variant("(s)", (finger,)), 0, -1, None)
        stages = device.get_cached_property("num-enroll-stages").unpack()
        for stage in range(stages):
            GLib.timeout_add(100 * (stage + 1), lambda: scan(socket_path, print_id) and False)
        GLib.timeout_add(30000, loop.quit)
        loop.run()
        device.call_sync("EnrollStop", None, 0, -1, None)
    finally:
        device.call_sync("Release", None, 0, -1, None)
    print(statuses[-1] if statuses else "no status")


def delete():
    bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
    device = default_device(bus)
    device.call_sync("Claim", GLib.Variant("(s)", ("",)), 0, -1, None)
    try:
        device.call_sync("DeleteEnrolledFingers2", None, 0, -1, None)
    finally:
        device.call_sync("Release", None, 0, -1, None)
    print("deleted")


def finger_needed(bus, device_path):
    reply = bus.call_sync(
        BUS_NAME, device_path, "org.freedesktop.DBus.Properties", "Get",
        GLib.Variant("(ss)", ("net.reactivated.Fprint.Device", "finger-needed")),
        None, 0, -1, None)
    return reply.unpack()[0]


def touch(socket_path, prints):
    bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
    path = default_device(bus).get_object_path()
    end = time.time() + 60
    for print_id in prints:
        while not finger_needed(bus, path):
            if time.time() > end:
                print("the reader never asked for a finger")
                sys.exit(3)
            time.sleep(0.05)
        scan(socket_path, print_id)
        while finger_needed(bus, path) and time.time() < end:
            time.sleep(0.05)
    print("touched")


if sys.argv[1] == "enroll":
    enroll(sys.argv[2], sys.argv[3], sys.argv[4])
elif sys.argv[1] == "delete":
    delete()
elif sys.argv[1] == "touch":
    touch(sys.argv[2], sys.argv[3:])
else:
    sys.exit(2)

"""A person at libfprint's virtual fingerprint reader, through fprintd on the system bus.

Usage:
  finger.py enroll FINGER PRINT   enrolls FINGER for the calling user on fprintd's default
                                  reader, touching it with PRINT at every stage; prints the
                                  last EnrollStatus ("enroll-completed")
  finger.py delete                deletes every finger of the calling user, as fprintd-delete
                                  does; prints "deleted"
  finger.py touch SOCKET PRINT... prints "ready"; once the reader needs a finger, touches it
                                  with each PRINT in turn (writes "SCAN PRINT" to the virtual
                                  device's SOCKET), one per try; prints "touched" once fprintd
                                  answered each; 60 s at most in all
  finger.py touch-each SOCKET PRINT...
                                  as touch, but one PRINT for each verification fprintd
                                  starts (each VerifyStart, of one program or another)
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
    # The reader takes one connection at a time and drops a command whose connection arrives
    # while it reads another: wait for it to close this one, which it does once it took it.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(10)
        connection.connect(path)
        connection.sendall(("SCAN " + print_id).encode())
        while connection.recv(1024):
            pass


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
        # The claimed reader queues the touches, one for each stage, so that none is late.
        for _ in range(device.get_cached_property("num-enroll-stages").unpack()):
            scan(socket_path, print_id)
        device.call_sync("EnrollStart", GLib.Variant("(s)", (finger,)), 0, -1, None)
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


def touch(socket_path, prints, each=False):
    bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
    path = default_device(bus).get_object_path()
    # libfprint's virtual reader gives up on a verification that gets no touch within half a
    # second, so the person reacts to fprintd's signal that a verification starts
    # (VerifyFingerSelected, sent for every VerifyStart; the reader's finger-needed property can
    # be left set by an enrolment, so it is no sign), not to a poll. The touches after the first
    # are queued at once, and the reader (claimed for all the tries) takes each at its next try.
    # Each touch is answered by a VerifyStatus signal.
    statuses = []
    loop = GLib.MainLoop()
    state = {"sent": False, "next": 0}

    def send_all():
        if each:
            # One finger for this verification; the next waits for the next one.
            state["sent"] = True
            if state["next"] < len(prints):
                scan(socket_path, prints[state["next"]])
                state["next"] += 1
            return
        if not state["sent"]:
            state["sent"] = True
            for print_id in prints:
                scan(socket_path, print_id)

    def on_status(*arguments):
        statuses.append(arguments[5].unpack()[0])
        if len(statuses) >= len(prints):
            loop.quit()

    bus.signal_subscribe(
        BUS_NAME, "net.reactivated.Fprint.Device", "VerifyStatus", path, None, 0, on_status)
    bus.signal_subscribe(
        BUS_NAME, "net.reactivated.Fprint.Device", "VerifyFingerSelected", path, None, 0,
        lambda *arguments: send_all())
    print("ready", flush=True)
    GLib.timeout_add(60000, loop.quit)
    loop.run()
    if not state["sent"]:
        print("the reader never asked for a finger")
        sys.exit(3)
    if len(statuses) < len(prints):
        print("the reader answered %d of %d touches: %s" % (len(statuses), len(prints), statuses))
        sys.exit(3)
    print("touched")


if sys.argv[1] == "enroll":
    enroll(sys.argv[2], sys.argv[3], sys.argv[4])
elif sys.argv[1] == "delete":
    delete()
elif sys.argv[1] == "touch":
    touch(sys.argv[2], sys.argv[3:])
elif sys.argv[1] == "touch-each":
    touch(sys.argv[2], sys.argv[3:], each=True)
else:
    sys.exit(2)

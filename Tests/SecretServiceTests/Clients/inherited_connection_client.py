"""Connects to the session bus, then hands the connection to a child and (with "exit") exits,
so that the bus's pid for the connection names a process that is gone, or (after the test
makes another process take that pid) a process that never connected.

Usage: inherited_connection_client.py DIRECTORY exit|stay
Writes DIRECTORY/ready ("UNIQUE_NAME PID"), waits for DIRECTORY/go, then makes the
connection's first Secret Service call (SearchItems with no attributes) from the child and
writes DIRECTORY/result: "ok N" with the number of unlocked items found, or "error NAME".
"""
import os
import sys
import time

from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection

directory, mode = sys.argv[1], sys.argv[2]
connection = open_dbus_connection(bus="SESSION")
with open(os.path.join(directory, "ready.tmp"), "w") as ready:
    ready.write(f"{connection.unique_name} {os.getpid()}\n")
os.rename(os.path.join(directory, "ready.tmp"), os.path.join(directory, "ready"))
if os.fork() != 0:
    if mode == "exit":
        os._exit(0)
    os.wait()
    os._exit(0)
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(directory, "go")) and time.monotonic() < deadline:
    time.sleep(0.02)
service = DBusAddress(
    "/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Service"
)
reply = connection.send_and_get_reply(new_method_call(service, "SearchItems", "a{ss}", ({},)), timeout=30)
if reply.header.message_type == MessageType.error:
    result = "error " + str(reply.header.fields.get(HeaderFields.error_name, ""))
else:
    result = f"ok {len(reply.body[0])}"
with open(os.path.join(directory, "result.tmp"), "w") as out:
    out.write(result + "\n")
os.rename(os.path.join(directory, "result.tmp"), os.path.join(directory, "result"))

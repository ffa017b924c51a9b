"""Asks the Secret Service to unlock the default collection COUNT times without ever calling
Prompt, then prints one line per answer: "prompt" when a prompt path came back, "done" when
nothing needed one, or "error NAME"."""
import sys

from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection

count = int(sys.argv[1])
connection = open_dbus_connection(bus="SESSION")
service = DBusAddress(
    "/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Service"
)
for _ in range(count):
    call = new_method_call(service, "Unlock", "ao", (["/org/freedesktop/secrets/aliases/default"],))
    reply = connection.send_and_get_reply(call, timeout=30)
    if reply.header.message_type == MessageType.error:
        print("error " + str(reply.header.fields.get(HeaderFields.error_name, "")), flush=True)
    else:
        print("prompt" if reply.body[1] != "/" else "done", flush=True)

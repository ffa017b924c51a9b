"""Asks to unlock the item service=SERVICE, which its access list keeps from this client, shows
the prompt, and dismisses it once keychaind's dialog is up. Prints "asked" when the dialog
(a pinentry child of the Secret Service's process) appeared, "dismissed" when the prompt said so,
then "closed" when the dialog went away within ten seconds, else "still open".
"""
import os
import sys
import time

import secretstorage
from secretstorage.util import PROMPT_IFACE, DBusAddressWrapper

SERVICE_IFACE = "org.freedesktop.Secret.Service"

connection = secretstorage.dbus_init()
# The search starts the provider (D-Bus activation); then its process is known.
item = next(secretstorage.search_items(connection, {"service": sys.argv[1]}))
bus = DBusAddressWrapper("/org/freedesktop/DBus", "org.freedesktop.DBus", connection)
bus.bus_name = "org.freedesktop.DBus"
provider = bus.call("GetConnectionUnixProcessID", "s", "org.freedesktop.secrets")[0]


def dialogs():
    """The pinentry processes the provider started."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/comm" % entry) as comm:
                name = comm.read().strip()
        except OSError:
            continue
        if int(fields[1]) == provider and name.startswith("pinentry"):
            found.append((int(entry), fields[0]))
    return found


service = DBusAddressWrapper("/org/freedesktop/secrets", SERVICE_IFACE, connection)
unlocked, prompt_path = service.call("Unlock", "ao", [item.item_path])
prompt = DBusAddressWrapper(prompt_path, PROMPT_IFACE, connection)
prompt.call("Prompt", "s", "")
end = time.time() + 30
while not dialogs() and time.time() < end:
    time.sleep(0.1)
print("asked" if dialogs() else "never asked", flush=True)
prompt.call("Dismiss", "")
print("dismissed", flush=True)
end = time.time() + 10
while dialogs() and time.time() < end:
    time.sleep(0.1)
print("still open %s" % dialogs() if dialogs() else "closed", flush=True)
connection.close()

"""Fills the in-memory session collection through secretstorage: COUNT items with distinct
attributes, then one more, then a secret over 64 KiB. Prints "stored N" (items accepted before
the first refusal), then the D-Bus error names of the two refused calls, "-" for none."""
import sys

import secretstorage
from jeepney.wrappers import DBusErrorResponse

count = int(sys.argv[1])
connection = secretstorage.dbus_init()
session = secretstorage.Collection(connection, "/org/freedesktop/secrets/collection/session")


def store(index, secret):
    try:
        session.create_item(f"quota {index}", {"service": "quota", "n": str(index)}, secret)
        return None
    except DBusErrorResponse as error:
        return error.name
    except Exception as error:  # secretstorage wraps some errors
        return type(error).__name__ + ": " + str(error)


stored = 0
for index in range(count):
    if store(index, b"s") is not None:
        break
    stored += 1
print(f"stored {stored}", flush=True)
print(store(count, b"s") or "-", flush=True)
print(store(count + 1, b"x" * (64 * 1024 + 1)) or "-", flush=True)

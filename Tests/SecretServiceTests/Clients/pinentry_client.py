"""Unlocks the locked default collection through secretstorage, whose prompt the provider
answers with a pinentry dialog on this process's terminal; then reads an item.

Prints "unlocked" or "dismissed", then the secret of the item service=pin, account=x.
"""
import ctypes
import sys

import secretstorage

# With an argument, the process renames itself (/proc/self/comm), as any program can.
if len(sys.argv) > 1:
    ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)  # PR_SET_NAME

connection = secretstorage.dbus_init()
collection = secretstorage.get_default_collection(connection)
assert collection.is_locked()
dismissed = collection.unlock(timeout=120)
print("dismissed" if dismissed else "unlocked", flush=True)
if not dismissed:
    items = list(collection.search_items({"service": "pin", "account": "x"}))
    print("secret=" + items[0].get_secret().decode(), flush=True)
connection.close()

"""Drives a locked keychain through secretstorage: the collection shows as locked, Unlock
answers with a prompt whose Completed signal comes once the keychain is unlocked by another
path (the test runs `security unlock-keychain`), then Lock locks it again.

The secret the test chose comes on standard input; "waiting" is printed before the prompt,
"ok" last.
"""
import sys

import secretstorage

secret = sys.stdin.read().encode()
connection = secretstorage.dbus_init()
collection = secretstorage.get_default_collection(connection)
assert collection.is_locked()
print("waiting", flush=True)
dismissed = collection.unlock(timeout=120)
assert dismissed is False
assert not collection.is_locked()
item = collection.create_item("Locked test", {"service": "locked", "account": "x"}, secret)
assert item.get_secret() == secret
collection.lock()
assert collection.is_locked()
connection.close()
print("ok")

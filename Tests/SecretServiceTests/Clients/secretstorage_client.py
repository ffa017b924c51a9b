"""Drives the Secret Service with the real secretstorage (jeepney, DH sessions).

Run by SecretServiceTests with the private bus in DBUS_SESSION_BUS_ADDRESS. Each step asserts;
the last line printed is "ok". The secret the test chose comes on standard input.
"""
import sys

import secretstorage

secret = sys.stdin.read().encode()
connection = secretstorage.dbus_init()
assert secretstorage.check_service_availability(connection)
collection = secretstorage.get_default_collection(connection)
assert not collection.is_locked()
assert collection.get_label() == "Login", collection.get_label()
assert "/org/freedesktop/secrets/collection/login" in [c.collection_path for c in secretstorage.get_all_collections(connection)]

# Store: a DH session (secretstorage always asks for one first).
item = collection.create_item("Py item", {"service": "py", "account": "bob", "extra": "1"}, secret)
assert item.get_secret() == secret
assert item.get_label() == "Py item"
assert item.get_attributes() == {"service": "py", "account": "bob", "extra": "1"}, item.get_attributes()
assert item.get_created() > 0 and item.get_modified() >= item.get_created()

# Find: by collection and by service, and in the list of all items.
found = list(collection.search_items({"service": "py", "account": "bob"}))
assert [f.item_path for f in found] == [item.item_path], found
assert [f.item_path for f in secretstorage.search_items(connection, {"extra": "1"})] == [item.item_path]
assert item.item_path in [i.item_path for i in collection.get_all_items()]
assert list(collection.search_items({"service": "py", "account": "nobody"})) == []

# Update: label, attributes, secret; replace=True changes the same item.
item.set_label("Py renamed")
assert item.get_label() == "Py renamed"
item.set_attributes({"service": "py", "account": "bob", "extra": "2"})
assert item.get_attributes()["extra"] == "2"
assert list(collection.search_items({"extra": "1"})) == []
item.set_secret(secret + b"-2")
assert item.get_secret() == secret + b"-2"
again = collection.create_item("Py renamed", {"service": "py", "account": "bob", "extra": "2"}, secret + b"-3", replace=True)
assert again.item_path == item.item_path
assert item.get_secret() == secret + b"-3"

# An item that the test's `security add-generic-password -s from-security -a carol` made.
crossed = list(collection.search_items({"service": "from-security", "account": "carol"}))
assert len(crossed) == 1 and crossed[0].get_secret() == secret + b"-security", crossed

# Leave one item for the test to find with `security`, delete the other.
kept = collection.create_item("Py kept", {"service": "py-kept", "account": "dave"}, secret + b"-kept")
item.delete()
assert list(collection.search_items({"service": "py", "account": "bob"})) == []
assert kept.get_secret() == secret + b"-kept"
connection.close()
print("ok")

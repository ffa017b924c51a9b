"""Unlocks the locked default collection through secretstorage, whose prompt the provider
answers with a pinentry dialog on this process's terminal; then reads an item.

Prints "unlocked" or "dismissed", then the secret of the item service=pin, account=x.
"""
import secretstorage

connection = secretstorage.dbus_init()
collection = secretstorage.get_default_collection(connection)
assert collection.is_locked()
dismissed = collection.unlock(timeout=120)
print("dismissed" if dismissed else "unlocked", flush=True)
if not dismissed:
    items = list(collection.search_items({"service": "pin", "account": "x"}))
    print("secret=" + items[0].get_secret().decode(), flush=True)
connection.close()

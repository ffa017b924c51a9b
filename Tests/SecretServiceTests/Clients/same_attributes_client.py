"""CreateItem without replace adds a second item with the same attributes, as the Secret
Service specification and libsecret expect (and GNOME Keyring does); with replace, it replaces.

Run by SecretServiceTests with the private bus in DBUS_SESSION_BUS_ADDRESS; the last line
printed is "ok".
"""
import secretstorage

connection = secretstorage.dbus_init()
collection = secretstorage.get_default_collection(connection)

# A map with other attributes, and a plain service-and-account map (the keychain's own key).
for attributes in ({"application": "same-map", "user": "u"}, {"service": "same-plain", "account": "a"}):
    first = collection.create_item("first", attributes, b"s1", replace=False)
    second = collection.create_item("second", attributes, b"s2", replace=False)
    assert first.item_path != second.item_path, (first.item_path, second.item_path)
    found = list(collection.search_items(attributes))
    assert len(found) == 2, found
    assert sorted(item.get_secret() for item in found) == [b"s1", b"s2"]
    assert all(item.get_attributes() == attributes for item in found)

    # replace=True replaces one of them: still two items.
    collection.create_item("third", attributes, b"s3", replace=True)
    found = list(collection.search_items(attributes))
    assert len(found) == 2, found
    assert b"s3" in [item.get_secret() for item in found]

    # Each one can be deleted on its own.
    found[0].delete()
    assert len(list(collection.search_items(attributes))) == 1
print("ok")

"""pykeepass, a second KDBX implementation, for KeePassFileTests.

  keepass_client.py create FILE [chacha20]  a new KDBX 4 database with Argon2d (1 MiB, 2 passes)
                                            and AES-256 (Argon2id and ChaCha20 with "chacha20");
                                            its password is read from standard input
  keepass_client.py dump FILE               the entries outside the recycle bin as JSON, the
                                            password read from standard input
"""
import json
import sys
import uuid

from pykeepass import PyKeePass, create_database

ARGON2ID = uuid.UUID("9e298b19-56db-4773-b23d-fc3ec6f0a1e6").bytes


def main():
    command, path = sys.argv[1], sys.argv[2]
    password = sys.stdin.readline().rstrip("\n")
    if command == "create":
        database = create_database(path, password=password)
        # A cheap derivation (1 MiB, 2 passes): the tests try the key many times, and the reader
        # takes the parameters from the file whatever they are.
        parameters = database.kdbx.header.value.dynamic_header.kdf_parameters.data.dict
        parameters["M"].value = 1 << 20
        parameters["I"].value = 2
        if sys.argv[3:] == ["chacha20"]:
            header = database.kdbx.header.value.dynamic_header
            header.cipher_id.data = "chacha20"
            header.encryption_iv.data = bytes(range(12))
            header.kdf_parameters.data.dict["$UUID"].value = ARGON2ID
        database.save()
        return
    database = PyKeePass(path, password=password)
    recycle_bin = database.recyclebin_group
    entries = []
    for entry in database.entries:
        if recycle_bin is not None and entry.group.uuid == recycle_bin.uuid:
            continue
        entries.append({
            "title": entry.title or "",
            "username": entry.username or "",
            "password": entry.password or "",
            "url": entry.url or "",
            "notes": entry.notes or "",
            "uuid": entry.uuid.hex,
            "path": "/".join(entry.path),
            "created": entry.ctime.timestamp(),
            "modified": entry.mtime.timestamp(),
        })
    json.dump(sorted(entries, key=lambda e: e["path"]), sys.stdout)


main()

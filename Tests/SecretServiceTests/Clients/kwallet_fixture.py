"""Makes a real KWallet file with the real kwalletd5, as a login with pam_kwallet does.

Usage: kwallet_fixture.py < input, the input being the wallet's password on its first line, then
entries.json (the password is in no process's arguments).
Runs with HOME, XDG_DATA_HOME, XDG_CONFIG_HOME, XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS set
(a private bus). Like pam_kwallet it writes a 56-byte salt beside the wallet, derives the key with
PBKDF2-SHA512 (50,000 rounds, 56 bytes), starts `kwalletd5 --pam-login` with the key on a pipe
and the session's environment on a socket, so kwalletd5 creates `kdewallet` with no dialog; then
writes the entries through kwalletd5's own D-Bus methods, closes the wallet and stops kwalletd5.
entries.json: [{"folder": F, "key": K, "type": "password"|"map"|"stream", "value": ...}]
(a map's value is an object, a stream's a hex string). Prints the wallet file's path.
"""
import hashlib
import json
import os
import socket
import struct
import subprocess
import sys
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

password = sys.stdin.buffer.readline().rstrip(b"\n")
entries = json.loads(sys.stdin.buffer.read())
data = os.environ["XDG_DATA_HOME"] + "/kwalletd"
os.makedirs(data, mode=0o700, exist_ok=True)
salt = os.urandom(56)
with open(data + "/kdewallet.salt", "wb") as f:
    f.write(salt)
key = hashlib.pbkdf2_hmac("sha512", password, salt, 50000, 56)

runtime = os.environ["XDG_RUNTIME_DIR"]
socket_path = runtime + "/kwallet5.socket"
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(socket_path)
listener.listen(1)
reader, writer = os.pipe()
environment = dict(os.environ, PAM_KWALLET5_LOGIN=socket_path, QT_QPA_PLATFORM="offscreen")
daemon = subprocess.Popen(
    ["/usr/bin/kwalletd5", "--pam-login", str(reader), str(listener.fileno())],
    pass_fds=(reader, listener.fileno()), env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
os.close(reader)
os.write(writer, key)
os.close(writer)
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
client.connect(socket_path)
for name in ("DBUS_SESSION_BUS_ADDRESS", "HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
    client.sendall(("%s=%s\n" % (name, os.environ[name])).encode())
client.close()
listener.close()

bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)


def call(method, signature, arguments, reply="(i)"):
    result = bus.call_sync(
        "org.kde.kwalletd5", "/modules/kwalletd5", "org.kde.KWallet", method,
        GLib.Variant(signature, arguments), GLib.VariantType(reply) if reply else None,
        Gio.DBusCallFlags.NONE, 30000, None)
    return result.unpack()[0] if reply else None


deadline = time.time() + 60
while True:
    owner = bus.call_sync(
        "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
        GLib.Variant("(s)", ("org.kde.kwalletd5",)), None, Gio.DBusCallFlags.NONE, -1, None).unpack()[0]
    if owner:
        break
    if daemon.poll() is not None or time.time() > deadline:
        sys.exit("kwalletd5 did not start: " + daemon.stderr.read().decode(errors="replace")[-2000:])
    time.sleep(0.05)


def qstring(text):
    encoded = text.encode("utf-16-be")
    return struct.pack(">I", len(encoded)) + encoded


app = "keychain-linux-test"
handle = -1
while handle < 0 and time.time() < deadline:
    handle = call("open", "(sxs)", ("kdewallet", 0, app))
    if handle < 0:
        time.sleep(0.1)
if handle < 0:
    sys.exit("kwalletd5 did not open kdewallet")
for entry in entries:
    if call("hasFolder", "(iss)", (handle, entry["folder"], app), "(b)") is False:
        call("createFolder", "(iss)", (handle, entry["folder"], app), "(b)")
    if entry["type"] == "password":
        status = call("writePassword", "(issss)", (handle, entry["folder"], entry["key"], entry["value"], app))
    elif entry["type"] == "map":
        serialized = struct.pack(">I", len(entry["value"])) + b"".join(
            qstring(k) + qstring(v) for k, v in entry["value"].items())
        status = call("writeMap", "(issays)", (handle, entry["folder"], entry["key"], serialized, app))
    else:
        status = call("writeEntry", "(issayis)", (
            handle, entry["folder"], entry["key"], bytes.fromhex(entry["value"]), 2, app))
    if status != 0:
        sys.exit("kwalletd5 refused %s/%s: %d" % (entry["folder"], entry["key"], status))
call("sync", "(is)", (handle, app), None)
call("close", "(ibs)", (handle, True, app))
# Closing saves the wallet; wait until the file's clear index counts every folder, then stop
# kwalletd5 (with SIGKILL: a test runner's children may inherit a blocked SIGTERM).
wallet = data + "/kdewallet.kwl"
folders = len({entry["folder"] for entry in entries})
while time.time() < deadline:
    try:
        with open(wallet, "rb") as f:
            header = f.read(20)
        if len(header) == 20 and struct.unpack(">I", header[16:20])[0] == folders:
            break
    except FileNotFoundError:
        pass
    time.sleep(0.05)
else:
    daemon.kill()
    sys.exit("kwalletd5 did not save the wallet")
daemon.kill()
daemon.wait(30)
print(wallet)

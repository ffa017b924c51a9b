"""Asks for this app's secret as libsecret in a Flatpak sandbox does.

`search APP_ID`: how many Secret Service items with that app_id the caller finds.

`frontend`: through xdg-desktop-portal (org.freedesktop.portal.Secret.RetrieveSecret), waiting
for the request's Response signal. `backend APP_ID`: straight at the backend
(org.freedesktop.impl.portal.Secret), as a program that is not the portal would try.
Prints one JSON object: the response code (or the D-Bus error's name) and the secret's bytes in hex.
"""
import json
import os
import sys

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
reader, writer = os.pipe()
descriptors = Gio.UnixFDList.new()
index = descriptors.append(writer)
os.close(writer)
outcome = {}


def read_secret():
    os.set_blocking(reader, False)
    data = b""
    while True:
        try:
            chunk = os.read(reader, 4096)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    return data.hex()


if sys.argv[1] == "search":
    # The Secret Service itself (not the portal): the items with this app_id the caller may see.
    reply = bus.call_sync(
        "org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems",
        GLib.Variant("(a{ss})", ({"app_id": sys.argv[2]},)), None, Gio.DBusCallFlags.NONE, 60000, None)
    unlocked, locked = reply.unpack()
    print(json.dumps({"found": len(unlocked) + len(locked)}))
    sys.exit(0)
elif sys.argv[1] == "frontend":
    token = "t%d" % os.getpid()
    sender = bus.get_unique_name()[1:].replace(".", "_")
    handle = "/org/freedesktop/portal/desktop/request/%s/%s" % (sender, token)
    loop = GLib.MainLoop()

    def on_response(connection, sender_name, path, interface, signal, parameters):
        outcome["response"] = parameters.unpack()[0]
        loop.quit()

    bus.signal_subscribe(
        "org.freedesktop.portal.Desktop", "org.freedesktop.portal.Request", "Response", handle, None,
        Gio.DBusSignalFlags.NONE, on_response)
    try:
        bus.call_with_unix_fd_list_sync(
            "org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop", "org.freedesktop.portal.Secret",
            "RetrieveSecret", GLib.Variant("(ha{sv})", (index, {"handle_token": GLib.Variant("s", token)})),
            None, Gio.DBusCallFlags.NONE, 60000, descriptors, None)
        GLib.timeout_add_seconds(60, loop.quit)
        loop.run()
    except GLib.Error as error:
        outcome["error"] = Gio.DBusError.get_remote_error(error) or error.message
else:
    try:
        reply, _ = bus.call_with_unix_fd_list_sync(
            "org.freedesktop.impl.portal.desktop.keychain", "/org/freedesktop/portal/desktop",
            "org.freedesktop.impl.portal.Secret", "RetrieveSecret",
            GLib.Variant("(osha{sv})", ("/org/freedesktop/portal/desktop/request/1_1/t", sys.argv[2], index, {})),
            None, Gio.DBusCallFlags.NONE, 60000, descriptors, None)
        outcome["response"] = reply.unpack()[0]
    except GLib.Error as error:
        outcome["error"] = Gio.DBusError.get_remote_error(error) or error.message
outcome["secret"] = read_secret()
print(json.dumps(outcome))

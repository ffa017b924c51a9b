"""A stand-in for KDE Plasma's secret prompter (`ksecretprompter`, Plasma 6.5 and later).

Debian 12 ships Plasma 5.27, which has no `org.kde.secretprompter`, so the tests start this
instead. It speaks the protocol as ksecretprompter does (KDE/plasma-workspace
`ksecretprompter/ksecretprompter.cpp`), with a scripted person in place of the dialog:

- It owns `org.kde.secretprompter` and serves `UnlockCollectionPrompt(o, s, s, s)` and
  `CreateCollectionPrompt(o, s, s, s)` at `/SecretPrompter`, answering at once.
- For each prompt it listens for the caller's `Retry(s)` and `Dismiss()` signals on the request
  path, then "types" the next answer of ANSWERS (a file, one per line): `password TEXT` writes TEXT
  to one end of a socket pair, calls `Accepted(h)` on the request with the other end and closes
  both; `reject` calls `Rejected()`; `flood` passes 70,000 bytes on a socket it keeps open;
  `wait` types nothing (the dialog stays on screen).
- An answer of 1 keeps the dialog: the next answer is typed once `Retry` arrives. 0 drops it.

Each event is one JSON line appended to LOG: `prompt` (the collection name it was asked to
show), `reply` (what Accepted or Rejected returned, or the D-Bus error), `retry` (the reason),
`dismiss`.

Usage: kde_secretprompter.py ANSWERS LOG
"""
import json
import os
import socket
import sys

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

ANSWERS, LOG = sys.argv[1], sys.argv[2]
XML = """
<node>
  <interface name="org.kde.secretprompter">
    <method name="UnlockCollectionPrompt">
      <arg type="o" direction="in"/><arg type="s" direction="in"/>
      <arg type="s" direction="in"/><arg type="s" direction="in"/>
    </method>
    <method name="CreateCollectionPrompt">
      <arg type="o" direction="in"/><arg type="s" direction="in"/>
      <arg type="s" direction="in"/><arg type="s" direction="in"/>
    </method>
  </interface>
</node>
"""
REQUEST = "org.kde.secretprompter.request"
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
kept = []
answers = [line.rstrip("\n") for line in open(ANSWERS, encoding="utf-8") if line.strip()]


def log(event, **fields):
    with open(LOG, "a", encoding="utf-8") as out:
        out.write(json.dumps(dict(event=event, **fields)) + "\n")


def type_next(caller, path):
    if not answers:
        return
    answer = answers.pop(0)
    if answer == "wait":
        return
    if answer == "reject":
        call(caller, path, "Rejected", None, None)
        return
    if answer == "flood":
        # More than any password, on a socket left open: no end is ever read.
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.sendall(b"x" * 70000)
        kept.append(ours)
        descriptors = Gio.UnixFDList.new()
        descriptors.append(theirs.fileno())
        call(caller, path, "Accepted", GLib.Variant("(h)", (0,)), descriptors)
        theirs.close()
        return
    password = answer.split(" ", 1)[1] if " " in answer else ""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.sendall(password.encode("utf-8"))
    descriptors = Gio.UnixFDList.new()
    descriptors.append(theirs.fileno())
    call(caller, path, "Accepted", GLib.Variant("(h)", (0,)), descriptors)
    ours.close()
    theirs.close()


def call(caller, path, member, parameters, descriptors):
    def done(connection, result):
        try:
            reply, _ = connection.call_with_unix_fd_list_finish(result)
            action = reply.unpack()[0]
            log("reply", member=member, action=action)
        except GLib.Error as error:
            log("reply", member=member, error=Gio.DBusError.get_remote_error(error) or error.message)

    bus.call_with_unix_fd_list(
        caller, path, REQUEST, member, parameters, GLib.VariantType("(i)"), Gio.DBusCallFlags.NONE, 25000,
        descriptors, None, done)


def on_signal(connection, sender, path, interface, member, parameters):
    if member == "Retry":
        log("retry", reason=parameters.unpack()[0])
        # The person reads the reason and types again (whether Retry or the reply came first).
        GLib.timeout_add(200, lambda: (type_next(sender, path), False)[1])
    elif member == "Dismiss":
        log("dismiss")


def on_call(connection, sender, path, interface, member, parameters, invocation):
    request, _window, _token, collection = parameters.unpack()
    log("prompt", member=member, request=request, collection=collection)
    for signal in ("Retry", "Dismiss"):
        bus.signal_subscribe(sender, REQUEST, signal, request, None, Gio.DBusSignalFlags.NONE, on_signal)
    invocation.return_value(None)
    GLib.timeout_add(200, lambda: (type_next(sender, request), False)[1])


node = Gio.DBusNodeInfo.new_for_xml(XML)
bus.register_object("/SecretPrompter", node.interfaces[0], on_call, None, None)
Gio.bus_own_name_on_connection(bus, "org.kde.secretprompter", Gio.BusNameOwnerFlags.NONE, None, None)
GLib.MainLoop().run()

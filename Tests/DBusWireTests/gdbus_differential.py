# Differential decoding with GDBus (python3-gi). Run with Debian's /usr/bin/python3.
# Mode "roundtrip": each stdin line is a hex message blob; GDBus decodes it, flips its byte
# order and re-encodes it; prints "OK <body signature> <hex>" or "ERR <exception type>".
# Mode "corpus": prints GDBus-authored blobs for fixed GVariant texts, both byte orders.
import binascii
import sys

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

LE = Gio.DBusMessageByteOrder.LITTLE_ENDIAN
BE = Gio.DBusMessageByteOrder.BIG_ENDIAN
CORPUS = [
    ("(a{sv})", "({'Label': <'Work'>, 'Count': <uint32 7>, 'Nested': <<[int16 -3, 4]>>},)"),
    ("(a(oayays))", "([(objectpath '/s/1', b'iv', [byte 0x00, 0xff], 'text/plain')],)"),
    ("(ynqiuxtdb)", "(byte 0xff, int16 -32768, uint16 65535, int32 -2147483648, uint32 4294967295, "
     "int64 -9223372036854775808, uint64 18446744073709551615, 2.5, true)"),
    ("(asa{sv}ay)", "(@as [], @a{sv} {}, @ay [])"),
    ("(a{ss})", "({'service': 'demo'},)"),
    ("(vg)", "(<(uint16 7, [<'x'>, <@ay []>])>, signature 'a{sv}')"),
]


def roundtrip():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            message = Gio.DBusMessage.new_from_blob(binascii.unhexlify(line), Gio.DBusCapabilityFlags.NONE)
            body = message.get_body()
            signature = body.get_type_string() if body is not None else "()"
            message.set_byte_order(BE if message.get_byte_order() == LE else LE)
            blob = message.to_blob(Gio.DBusCapabilityFlags.NONE)
            print("OK", signature, binascii.hexlify(bytes(blob)).decode())
        except Exception as error:  # report the kind only: values may be arbitrary bytes
            print("ERR", type(error).__name__)
        sys.stdout.flush()


def corpus():
    for signature, text in CORPUS:
        for order in (LE, BE):
            message = Gio.DBusMessage.new_method_call(None, "/org/example/Test", "org.example.Test", "M")
            message.set_body(GLib.Variant.parse(GLib.VariantType(signature), text, None, None))
            message.set_serial(7)
            message.set_byte_order(order)
            print(binascii.hexlify(bytes(message.to_blob(Gio.DBusCapabilityFlags.NONE))).decode())


if __name__ == "__main__":
    roundtrip() if sys.argv[1] == "roundtrip" else corpus()

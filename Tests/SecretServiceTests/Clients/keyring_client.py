"""Drives the Secret Service with the real Python keyring (its SecretService backend).

Run by SecretServiceTests with the private bus in DBUS_SESSION_BUS_ADDRESS. Each step asserts;
the last line printed is "ok". The secret the test chose comes on standard input.
"""
import sys

import keyring
from keyring.backends import SecretService

secret = sys.stdin.read()
backend = SecretService.Keyring()
assert backend.priority > 0
keyring.set_keyring(backend)

keyring.set_password("kr-service", "erin", secret)
assert keyring.get_password("kr-service", "erin") == secret
credential = keyring.get_credential("kr-service", None)
assert credential is not None and credential.username == "erin" and credential.password == secret

keyring.set_password("kr-service", "erin", secret + "-2")
assert keyring.get_password("kr-service", "erin") == secret + "-2"
assert keyring.get_password("kr-service", "nobody") is None

# The item the test's `security add-generic-password -s from-security -a carol` made.
assert keyring.get_password("from-security", "carol") == secret + "-security"

keyring.set_password("kr-kept", "frank", secret + "-kept")
keyring.delete_password("kr-service", "erin")
assert keyring.get_password("kr-service", "erin") is None
try:
    keyring.delete_password("kr-service", "erin")
    raise AssertionError("deleting a missing password succeeded")
except keyring.errors.PasswordDeleteError:
    pass
print("ok")

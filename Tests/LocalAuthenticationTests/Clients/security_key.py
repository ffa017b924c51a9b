"""A software FIDO2 (CTAP2) security key, standing in for a USB key in tests.

Usage: security_key.py SOCKET_PATH STATE_DIR

Listens on a Unix socket of type SOCK_SEQPACKET at SOCKET_PATH (mode 0666), prints "ready", then
serves connections at once, as a USB key serves the programs that open it, until SIGTERM. Each
socket message is one 64-byte CTAPHID report (FIDO CTAP 2.1, section 11.2) without a report ID,
in both directions. As a real key, it runs one CTAP2 command at a time: a command on one
connection while another's runs gets ERR_CHANNEL_BUSY.

STATE_DIR holds:
  credentials.json  the credentials made: rp id, credential id, PEM private key, sign counter
  presence          what the person does when a touch is needed, read each time: "touch" (also
                    when missing), "touch after SECONDS" (keepalives first), "deny", or
                    "ignore" (nobody touches; time out after 3 s)
  log               one line per event: "request COMMAND", "touched COMMAND", "denied COMMAND",
                    "timeout COMMAND", "cancelled COMMAND", "silent get-assertion", where COMMAND
                    is get-info, make-credential, get-assertion or reset

  pin               the key's PIN (UTF-8), when it has one: clientPin is then set, PIN protocol
                    1 (CTAP 2.0, 5.5) is spoken, and making a credential needs the PIN
  always-uv         when present, every assertion needs the PIN too (alwaysUv)
  pin-retries       the PIN tries left (8 when missing); a wrong PIN logs "wrong pin", a right
                    one "pin accepted"

Credentials are ES256 (P-256) and not resident, attested with their own key ("packed" self
attestation); no user verification other than the PIN.
"""
import hashlib
import hmac
import json
import os
import secrets
import select
import signal
import socket
import sys
import threading
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

AAGUID = bytes.fromhex("5f3a9c1e7b2d4e60a8c4d2f1e0b7a693")
ES256 = -7
TOUCH_TIMEOUT, KEEPALIVE_INTERVAL = 3.0, 0.1  # seconds

# CTAPHID: report layout, commands, error codes.
REPORT_SIZE = 64
INIT_DATA, CONT_DATA = REPORT_SIZE - 7, REPORT_SIZE - 5  # payload bytes per init/continuation
MAX_MESSAGE = INIT_DATA + 128 * CONT_DATA
BROADCAST_CID = b"\xff\xff\xff\xff"
PING, INIT, CBOR, CANCEL, KEEPALIVE, ERROR = 0x81, 0x86, 0x90, 0x91, 0xBB, 0xBF
ERR_INVALID_CMD, ERR_INVALID_LEN, ERR_INVALID_SEQ, ERR_BUSY, ERR_INVALID_CHANNEL = 1, 3, 4, 6, 0x0B
KEEPALIVE_UP_NEEDED = 2
CAPABILITIES = 0x04 | 0x08  # CBOR; NMSG: no CTAP1 (U2F) messages

# CTAP2 status codes.
OK, INVALID_COMMAND, CBOR_UNEXPECTED_TYPE, INVALID_CBOR, MISSING_PARAMETER = 0, 1, 0x11, 0x12, 0x14
CREDENTIAL_EXCLUDED, UNSUPPORTED_ALGORITHM, OPERATION_DENIED = 0x19, 0x26, 0x27
UNSUPPORTED_OPTION, KEEPALIVE_CANCEL, NO_CREDENTIALS, USER_ACTION_TIMEOUT = 0x2B, 0x2D, 0x2E, 0x2F
INVALID_PARAMETER, PIN_INVALID, PIN_BLOCKED, PIN_AUTH_INVALID = 0x02, 0x31, 0x32, 0x33
PIN_NOT_SET, PIN_REQUIRED, INVALID_SUBCOMMAND = 0x35, 0x36, 0x3E


# --- CBOR: the subset CTAP2 uses, definite lengths only -----------------------------------------

class CborError(Exception):
    pass


def _head(major, number):
    """The first byte(s) of an item: its major type and the shortest encoding of its argument."""
    if number < 24:
        return bytes([major << 5 | number])
    for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if number < 1 << (8 * size):
            return bytes([major << 5 | info]) + number.to_bytes(size, "big")
    raise ValueError("integer too large for CBOR")


def cbor_encode(value):
    if isinstance(value, bool):  # before int, since a bool is an int in Python
        return b"\xf5" if value else b"\xf4"
    if isinstance(value, int):
        return _head(0, value) if value >= 0 else _head(1, -1 - value)
    if isinstance(value, str):
        value = value.encode()
        return _head(3, len(value)) + value
    if isinstance(value, bytes):
        return _head(2, len(value)) + value
    if isinstance(value, list):
        return _head(4, len(value)) + b"".join(map(cbor_encode, value))
    if isinstance(value, dict):  # CTAP2 canonical order: shorter keys first, then bytewise
        pairs = sorted((cbor_encode(k), cbor_encode(v)) for k, v in value.items())
        pairs.sort(key=lambda pair: len(pair[0]))  # stable: keeps the bytewise order per length
        return _head(5, len(pairs)) + b"".join(k + v for k, v in pairs)
    raise TypeError(f"cannot encode {type(value).__name__} in CBOR")


def cbor_decode(data):
    """The single item that data holds."""
    value, end = _decode(data, 0)
    if end != len(data):
        raise CborError("trailing bytes")
    return value


def _decode(data, pos):
    """The item at data[pos:] and the position after it."""
    if pos >= len(data):
        raise CborError("truncated")
    major, info = data[pos] >> 5, data[pos] & 0x1F
    pos += 1
    if major == 7:  # simple values: only false (20) and true (21)
        if info not in (20, 21):
            raise CborError(f"unsupported simple value {info}")
        return info == 21, pos
    if info < 24:
        number = info
    elif info <= 27:  # the argument follows in 1, 2, 4 or 8 bytes
        size = 1 << (info - 24)
        number, pos = int.from_bytes(data[pos:pos + size], "big"), pos + size
    else:
        raise CborError("indefinite or reserved length")
    if pos > len(data):
        raise CborError("truncated")
    if major in (0, 1):
        return (number if major == 0 else -1 - number), pos
    if major in (2, 3):
        chunk, pos = bytes(data[pos:pos + number]), pos + number
        if pos > len(data):
            raise CborError("truncated")
        try:
            return (chunk if major == 2 else chunk.decode()), pos
        except UnicodeDecodeError as error:
            raise CborError("invalid UTF-8") from error
    if major == 4:
        items = []
        for _ in range(number):
            item, pos = _decode(data, pos)
            items.append(item)
        return items, pos
    if major == 5:
        result = {}
        for _ in range(number):
            key, pos = _decode(data, pos)
            if isinstance(key, (list, dict)):
                raise CborError("unsupported map key")
            result[key], pos = _decode(data, pos)
        return result, pos
    raise CborError("tags are not supported")


# --- State directory ----------------------------------------------------------------------------

class State:
    """The files of STATE_DIR."""

    def __init__(self, directory):
        self.path = lambda name: os.path.join(directory, name)

    def _read(self, name, default):
        try:
            with open(self.path(name)) as file:
                return file.read()
        except FileNotFoundError:
            return default

    def log(self, line):
        with open(self.path("log"), "a") as log:
            log.write(line + "\n")

    def presence(self):
        return self._read("presence", "touch").strip()

    def pin(self):
        return self._read("pin", None)

    def always_uv(self):
        return os.path.exists(self.path("always-uv"))

    def retries(self):
        return int(self._read("pin-retries", "8"))

    def set_retries(self, count):
        with open(self.path("pin-retries"), "w") as file:
            file.write(str(count))

    def credentials(self):
        """A list of {"rp_id", "credential_id" (hex), "private_key" (PEM), "sign_count"}."""
        return json.loads(self._read("credentials.json", "[]"))

    def save(self, credentials):
        with open(self.path("credentials.json.tmp"), "w") as file:
            json.dump(credentials, file, indent=1)
        os.replace(file.name, self.path("credentials.json"))  # never half-written


# --- CTAP2 --------------------------------------------------------------------------------------

class CtapError(Exception):
    """Ends a command with the CTAP2 status args[0]."""


def param(params, key, kind, required=True):
    """params[key], checked to be a kind; None when absent and not required."""
    value = params.get(key)
    if value is None and required:
        raise CtapError(MISSING_PARAMETER)
    # (a bool is an int in Python: only a bool may be, or stand for, a bool)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool) != (kind is bool)):
        raise CtapError(CBOR_UNEXPECTED_TYPE)
    return value


def options(params, key):
    """The options map params[key]: it may not ask for user verification or a resident key."""
    result = param(params, key, dict, required=False) or {}
    if not all(isinstance(value, bool) for value in result.values()):
        raise CtapError(CBOR_UNEXPECTED_TYPE)
    if result.get("uv") or result.get("rk"):
        raise CtapError(UNSUPPORTED_OPTION)
    return result


def find_credential(credentials, rp_id, descriptors):
    """The first stored credential of rp_id that a list of credential descriptors names."""
    for descriptor in descriptors:
        if not isinstance(descriptor, dict) or not isinstance(descriptor.get("id"), bytes):
            raise CtapError(CBOR_UNEXPECTED_TYPE)
        for credential in credentials:
            if (credential["rp_id"] == rp_id and descriptor.get("type") == "public-key"
                    and credential["credential_id"] == descriptor["id"].hex()):
                return credential
    return None


def aes_cbc(key, data, encrypt):
    """AES-256-CBC with a zero IV, no padding: PIN protocol 1's cipher."""
    cipher = Cipher(algorithms.AES(key), modes.CBC(bytes(16)))
    worker = cipher.encryptor() if encrypt else cipher.decryptor()
    return worker.update(data) + worker.finalize()


def sign(private_key, auth_data, client_data_hash):
    """The DER ECDSA-SHA256 signature of authenticator data and client data hash."""
    return private_key.sign(auth_data + client_data_hash, ec.ECDSA(hashes.SHA256()))


class Authenticator:
    NAMES = {0x01: "make-credential", 0x02: "get-assertion", 0x04: "get-info", 0x06: "client-pin",
             0x07: "reset"}

    def __init__(self, state):
        self.state = state
        self.agreement = None  # this power cycle's key agreement key (PIN protocol 1)
        self.token = None  # the PIN token given out last

    def verified(self, client_data_hash, pin_auth, protocol):
        """Whether the request proves the PIN (its pinAuth over the client data hash): True with a
        valid one, False without one (PIN_REQUIRED when the key always asks for it)."""
        if pin_auth is None:
            if self.state.always_uv():
                raise CtapError(PIN_REQUIRED)
            return False
        expected = hmac.new(self.token or b"", client_data_hash, hashlib.sha256).digest()[:16]
        if self.token is None or protocol != 1 or not hmac.compare_digest(expected, pin_auth):
            raise CtapError(PIN_AUTH_INVALID)
        return True

    def handle(self, request, wait_for_touch):
        """The reply (status byte + CBOR) to a request (command byte + CBOR parameters).

        wait_for_touch(command) asks for a touch: None once touched, else a CTAP2 status."""
        name = self.NAMES.get(request[0], f"command-0x{request[0]:02x}")
        self.state.log(f"request {name}")
        handler = getattr(self, name.replace("-", "_"), None)

        def touch():
            status = wait_for_touch(name)
            if status is not None:
                raise CtapError(status)
        try:
            if handler is None:
                raise CtapError(INVALID_COMMAND)
            try:
                params = cbor_decode(request[1:]) if len(request) > 1 else {}
            except (CborError, RecursionError):
                raise CtapError(INVALID_CBOR)
            if not isinstance(params, dict):
                raise CtapError(INVALID_CBOR)
            reply = handler(params, touch)
            return bytes([OK]) + (b"" if reply is None else cbor_encode(reply))
        except CtapError as error:
            return bytes([error.args[0]])

    def get_info(self, params, touch):
        info = {1: ["FIDO_2_0"], 3: AAGUID, 4: {"rk": False, "up": True, "plat": False}, 5: 1200}
        if self.state.pin() is not None:
            info[4]["clientPin"] = True
            info[6] = [1]
        if self.state.always_uv():
            info[4]["alwaysUv"] = True
        return info

    def client_pin(self, params, touch):
        protocol, command = param(params, 1, int), param(params, 2, int)
        if protocol != 1:
            raise CtapError(INVALID_PARAMETER)
        if command == 1:  # getRetries
            return {3: self.state.retries()}
        if command == 2:  # getKeyAgreement
            self.agreement = ec.generate_private_key(ec.SECP256R1())
            point = self.agreement.public_key().public_numbers()
            return {1: {1: 2, 3: -25, -1: 1, -2: point.x.to_bytes(32, "big"), -3: point.y.to_bytes(32, "big")}}
        if command != 5:  # getPINToken
            raise CtapError(INVALID_SUBCOMMAND)
        pin = self.state.pin()
        if pin is None:
            raise CtapError(PIN_NOT_SET)
        if self.state.retries() == 0:
            raise CtapError(PIN_BLOCKED)
        platform, pin_hash_enc = param(params, 3, dict), param(params, 6, bytes)
        x, y = platform.get(-2), platform.get(-3)
        if self.agreement is None or not isinstance(x, bytes) or not isinstance(y, bytes) or len(pin_hash_enc) != 16:
            raise CtapError(INVALID_PARAMETER)
        peer = ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"), ec.SECP256R1())
        shared = hashlib.sha256(self.agreement.exchange(ec.ECDH(), peer.public_key())).digest()
        self.state.set_retries(self.state.retries() - 1)
        if not hmac.compare_digest(aes_cbc(shared, pin_hash_enc, False), hashlib.sha256(pin.encode()).digest()[:16]):
            self.agreement = ec.generate_private_key(ec.SECP256R1())
            self.state.log("wrong pin")
            raise CtapError(PIN_BLOCKED if self.state.retries() == 0 else PIN_INVALID)
        self.state.set_retries(8)
        self.state.log("pin accepted")
        self.token = secrets.token_bytes(32)
        return {2: aes_cbc(shared, self.token, True)}

    def make_credential(self, params, touch):
        client_data_hash = param(params, 1, bytes)
        rp_id = param(param(params, 2, dict), "id", str)
        param(params, 3, dict)  # the user, which a non-resident credential does not keep
        algorithms = param(params, 4, list)
        exclude_list = param(params, 5, list, required=False) or []
        options(params, 7)
        pin_auth = param(params, 8, bytes, required=False)
        if pin_auth is None and self.state.pin() is not None:
            raise CtapError(PIN_REQUIRED)  # CTAP 2.0: with a PIN set, a credential needs it
        verified = self.verified(client_data_hash, pin_auth, param(params, 9, int, required=False))
        if not any(isinstance(p, dict) and p.get("alg") == ES256 and p.get("type") == "public-key"
                   for p in algorithms):
            raise CtapError(UNSUPPORTED_ALGORITHM)
        credentials = self.state.credentials()
        if find_credential(credentials, rp_id, exclude_list):
            touch()  # the person must agree before the key tells that the credential exists
            raise CtapError(CREDENTIAL_EXCLUDED)
        touch()

        private_key = ec.generate_private_key(ec.SECP256R1())
        credential_id = secrets.token_bytes(32)
        point = private_key.public_key().public_numbers()
        cose_key = {1: 2, 3: ES256, -1: 1,  # kty EC2, alg ES256, crv P-256
                    -2: point.x.to_bytes(32, "big"), -3: point.y.to_bytes(32, "big")}
        auth_data = (hashlib.sha256(rp_id.encode()).digest() + bytes([0x45 if verified else 0x41])  # UP | UV? | AT
                     + (0).to_bytes(4, "big") + AAGUID + len(credential_id).to_bytes(2, "big")
                     + credential_id + cbor_encode(cose_key))
        pem = private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption())
        credentials.append({"rp_id": rp_id, "credential_id": credential_id.hex(),
                            "private_key": pem.decode(), "sign_count": 0})
        self.state.save(credentials)
        statement = {"alg": ES256, "sig": sign(private_key, auth_data, client_data_hash)}
        return {1: "packed", 2: auth_data, 3: statement}

    def get_assertion(self, params, touch):
        rp_id = param(params, 1, str)
        client_data_hash = param(params, 2, bytes)
        allow_list = param(params, 3, list, required=False) or []
        user_presence = options(params, 5).get("up", True)
        verified = self.verified(client_data_hash, param(params, 6, bytes, required=False),
                                 param(params, 7, int, required=False))
        credentials = self.state.credentials()
        # Without an allow list nothing matches, since the key keeps no resident credentials.
        credential = find_credential(credentials, rp_id, allow_list)
        if credential is None:
            raise CtapError(NO_CREDENTIALS)
        if user_presence:
            touch()
        else:
            self.state.log("silent get-assertion")
        credential["sign_count"] += 1
        self.state.save(credentials)
        auth_data = (hashlib.sha256(rp_id.encode()).digest()
                     + bytes([(0x01 if user_presence else 0) | (0x04 if verified else 0)])
                     + credential["sign_count"].to_bytes(4, "big"))
        private_key = serialization.load_pem_private_key(credential["private_key"].encode(), None)
        return {1: {"id": bytes.fromhex(credential["credential_id"]), "type": "public-key"},
                2: auth_data, 3: sign(private_key, auth_data, client_data_hash)}

    def reset(self, params, touch):
        touch()
        self.state.save([])


# --- CTAPHID over the socket --------------------------------------------------------------------

class Device:
    """What the connections share: the connection whose CTAP2 command runs, if any."""

    def __init__(self):
        self.lock, self.running = threading.Lock(), None

    def start(self, connection):
        """Whether connection may run a command now (no other connection's runs)."""
        with self.lock:
            if self.running is not None and self.running is not connection:
                return False
            self.running = connection
            return True

    def finish(self):
        with self.lock:
            self.running = None


class Connection:
    def __init__(self, sock, authenticator, state, channels, device):
        self.sock, self.authenticator, self.state = sock, authenticator, state
        self.channels = channels  # the CIDs allocated so far, by any connection
        self.device = device
        self.partial = None  # the message being reassembled: [cid, cmd, length, data, next seq]

    def receive(self, timeout=None):
        """The next 64-byte report, or None if none came within timeout seconds."""
        while select.select([self.sock], [], [], timeout)[0]:
            report = self.sock.recv(4096)
            if not report:
                raise EOFError("the peer closed the connection")
            if len(report) == REPORT_SIZE:
                return report
            print(f"security_key: ignored a report of {len(report)} bytes", file=sys.stderr)
        return None

    def send(self, cid, cmd, payload):
        reports = [cid + bytes([cmd]) + len(payload).to_bytes(2, "big") + payload[:INIT_DATA]]
        for seq, offset in enumerate(range(INIT_DATA, len(payload), CONT_DATA)):
            reports.append(cid + bytes([seq]) + payload[offset:offset + CONT_DATA])
        for report in reports:
            self.sock.send(report.ljust(REPORT_SIZE, b"\0"))

    def serve(self):
        try:
            while True:
                message = self.reassemble(self.receive())
                if message:
                    self.dispatch(*message)
        except (EOFError, ConnectionError):
            pass

    def reassemble(self, report):
        """(cid, cmd, payload) once report completes a message, else None."""
        cid, kind = report[:4], report[4]
        if kind & 0x80:  # an initialization packet starts a message (dropping any partial one)
            length = int.from_bytes(report[5:7], "big")
            self.partial = [cid, kind, length, report[7:7 + length], 0]
            if length > MAX_MESSAGE:
                self.partial = None
                self.send(cid, ERROR, bytes([ERR_INVALID_LEN]))
                return None
        elif self.partial is None or self.partial[0] != cid:
            return None  # a stray continuation packet
        elif kind != self.partial[4]:
            self.partial = None
            self.send(cid, ERROR, bytes([ERR_INVALID_SEQ]))
            return None
        else:
            self.partial[3] += report[5:]
            self.partial[4] += 1
        cid, cmd, length, data, _ = self.partial
        if len(data) < length:
            return None
        self.partial = None
        return cid, cmd, data[:length]

    def dispatch(self, cid, cmd, payload):
        if cmd == INIT and len(payload) != 8:
            self.send(cid, ERROR, bytes([ERR_INVALID_LEN]))
        elif cmd == INIT and (cid == BROADCAST_CID or cid in self.channels):
            channel = cid  # INIT on an allocated channel resynchronises it, keeping its CID
            if cid == BROADCAST_CID:  # allocate a new channel
                while channel in (BROADCAST_CID, b"\0\0\0\0") or channel in self.channels:
                    channel = secrets.token_bytes(4)
                self.channels.add(channel)
            # nonce | CID | CTAPHID protocol 2 | device version 1.0.0 | capabilities
            self.send(cid, INIT, payload + channel + bytes([2, 1, 0, 0, CAPABILITIES]))
        elif cid not in self.channels:
            self.send(cid, ERROR, bytes([ERR_INVALID_CHANNEL]))
        elif cmd == PING:
            self.send(cid, PING, payload)
        elif cmd == CBOR and payload and not self.device.start(self):
            self.send(cid, ERROR, bytes([ERR_BUSY]))
        elif cmd == CBOR and payload:
            try:
                self.send(cid, CBOR, self.authenticator.handle(payload, lambda name: self.touch(cid, name)))
            finally:
                self.device.finish()
        elif cmd == CBOR:
            self.send(cid, ERROR, bytes([ERR_INVALID_LEN]))
        elif cmd != CANCEL:  # a CANCEL with nothing to cancel is ignored; MSG (U2F) is not served
            self.send(cid, ERROR, bytes([ERR_INVALID_CMD]))

    def touch(self, cid, command):
        """Waits for the person (the presence file) to touch: None once touched, else a status."""
        start = time.monotonic()
        deadline = start + TOUCH_TIMEOUT
        while True:
            presence = self.state.presence()
            if presence.startswith("touch after "):
                presence = "touch" if time.monotonic() - start >= float(presence.split()[-1]) else "wait"
            if presence == "touch":
                self.state.log(f"touched {command}")
                return None
            if presence == "deny":
                self.state.log(f"denied {command}")
                return OPERATION_DENIED
            if presence != "wait" and time.monotonic() >= deadline:  # "ignore" (or else): nobody touched
                self.state.log(f"timeout {command}")
                return USER_ACTION_TIMEOUT
            self.send(cid, KEEPALIVE, bytes([KEEPALIVE_UP_NEEDED]))
            if self.cancelled(cid, time.monotonic() + KEEPALIVE_INTERVAL):
                self.state.log(f"cancelled {command}")
                return KEEPALIVE_CANCEL

    def cancelled(self, cid, until):
        """Whether a CANCEL for cid comes before the time until; other requests meanwhile get BUSY."""
        while (remaining := until - time.monotonic()) > 0:
            report = self.receive(remaining)
            if report is None:
                break
            if report[:4] == cid and report[4] == CANCEL:
                return True
            if report[4] & 0x80:
                self.send(report[:4], ERROR, bytes([ERR_BUSY]))
        return False


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: security_key.py SOCKET_PATH STATE_DIR")
    socket_path, state_dir = sys.argv[1:]
    os.makedirs(state_dir, exist_ok=True)
    state = State(state_dir)
    authenticator, channels, device = Authenticator(state), set(), Device()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # unwinds through the finally below

    if os.path.lexists(socket_path):
        os.unlink(socket_path)  # left by an earlier run
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(socket_path)
    inode = os.stat(socket_path).st_ino
    try:
        os.chmod(socket_path, 0o666)
        server.listen(8)
        print("ready", flush=True)
        def serve(connection):
            with connection:
                Connection(connection, authenticator, state, channels, device).serve()
        while True:
            connection, _ = server.accept()
            threading.Thread(target=serve, args=(connection,), daemon=True).start()
    finally:
        server.close()
        if os.path.exists(socket_path) and os.stat(socket_path).st_ino == inode:
            os.unlink(socket_path)  # unless a newer key already replaced it


if __name__ == "__main__":
    main()

"""Reads a CXF 1.0 document (the FIDO Credential Exchange Format) from standard input as an
importer would, checking every member the format requires and the type of each it names
(https://fidoalliance.org/specs/cx/cxf-v1.0-ps-20250814.html: Header, Account, Collection,
LinkedItem, Item, CredentialScope, EditableField, and the basic-auth, note and custom-fields
credentials).

Prints one JSON object: {"errors": [...], "items": [{title, username, password, urls, notes,
fields, created, modified}]}, the items in the document's order.
"""
import base64
import json
import sys

errors = []


def need(condition, what):
    if not condition:
        errors.append(what)
    return condition


def b64url(value, what):
    if not need(isinstance(value, str) and "=" not in value and "+" not in value and "/" not in value, what):
        return b""
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except Exception:
        need(False, what)
        return b""
    need(0 < len(raw) <= 64, what + " (1 to 64 bytes)")
    return raw


def editable(field, field_type, what):
    if not need(isinstance(field, dict), what):
        return None
    need(field.get("fieldType") == field_type, f"{what}.fieldType is {field_type}")
    need(isinstance(field.get("value"), str), f"{what}.value is a string")
    if "label" in field:
        need(isinstance(field["label"], str), f"{what}.label is a string")
    return field.get("value")


def timestamp(value, what):
    need(isinstance(value, int) and not isinstance(value, bool) and value >= 0, what + " is a UNIX time")


document = json.load(sys.stdin)
need(isinstance(document, dict), "the document is an object")
version = document.get("version", {})
need(version.get("major") == 1 and isinstance(version.get("minor"), int), "version 1.x")
need(isinstance(document.get("exporterRpId"), str) and document["exporterRpId"], "exporterRpId")
need(isinstance(document.get("exporterDisplayName"), str) and document["exporterDisplayName"], "exporterDisplayName")
timestamp(document.get("timestamp"), "timestamp")
items_out = []
accounts = document.get("accounts")
need(isinstance(accounts, list) and accounts, "accounts")
for account in accounts or []:
    b64url(account.get("id"), "account.id")
    need(isinstance(account.get("username"), str), "account.username")
    need(isinstance(account.get("email"), str), "account.email")
    ids = set()
    for item in account.get("items", []):
        ids.add(bytes(b64url(item.get("id"), "item.id")))
        need(isinstance(item.get("title"), str), "item.title")
        for key in ("creationAt", "modifiedAt"):
            if key in item:
                timestamp(item[key], "item." + key)
        out = {"title": item.get("title"), "urls": [], "notes": None, "fields": {},
               "created": item.get("creationAt"), "modified": item.get("modifiedAt")}
        scope = item.get("scope")
        if scope is not None:
            need(isinstance(scope.get("urls"), list) and isinstance(scope.get("androidApps"), list), "item.scope")
            out["urls"] = scope.get("urls", [])
        credentials = item.get("credentials")
        need(isinstance(credentials, list) and credentials, "item.credentials")
        for credential in credentials or []:
            kind = credential.get("type")
            if kind == "basic-auth":
                out["username"] = editable(credential.get("username"), "string", "basic-auth.username")
                out["password"] = editable(credential.get("password"), "concealed-string", "basic-auth.password")
            elif kind == "note":
                out["notes"] = editable(credential.get("content"), "string", "note.content")
            elif kind == "custom-fields":
                for field in credential.get("fields", []):
                    value = editable(field, "string", "custom-fields.field")
                    out["fields"][field.get("label")] = value
            else:
                need(False, "a credential of a known type: " + str(kind))
        items_out.append(out)
    need(isinstance(account.get("collections"), list), "account.collections")
    for collection in account.get("collections", []):
        b64url(collection.get("id"), "collection.id")
        need(isinstance(collection.get("title"), str), "collection.title")
        for linked in collection.get("items", []):
            need(bytes(b64url(linked.get("item"), "linkedItem.item")) in ids, "a linked item is in the account")

json.dump({"errors": errors, "items": items_out}, sys.stdout)

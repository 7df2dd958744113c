"""SCRAM credentials of a MongoDBCommunity user, for the Secret
``<scramCredentialsSecretName>-scram-credentials`` the community operator also writes
(pure, unit-tested against the RFC 5802 and RFC 7677 examples).

A SCRAM verifier (RFC 5802): ``SaltedPassword = PBKDF2(HMAC-H, password, salt, i)``,
``StoredKey = H(HMAC(SaltedPassword, "Client Key"))``, ``ServerKey = HMAC(SaltedPassword,
"Server Key")`` — enough for a server to check a client's proof and prove itself, never
enough to log in. MongoDB's SCRAM-SHA-1 hashes ``<user>:mongo:<password>`` with MD5 (hex)
first; SCRAM-SHA-256 takes the password as it is (SASLprep leaves printable ASCII unchanged;
other passwords are used without it). Iterations are mongod's defaults (10000, 15000); the
salt is derived from the object's uid and the user, so the Secret stays the same until the
password changes and differs between objects.

These are the credentials of the password for *this* salt: mongod salts its own copy when
the bootstrap creates the user (``createUser`` takes a password, not a verifier), so they
are not the bytes in ``admin.system.users`` — they are for whatever checks SCRAM against
this Secret, as with the community operator.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from appstack.api.mongodbcommunity import User
from appstack.controllers.util.meta import child_labels
from appstack.sdk import KubeObject, Manifest, child_metadata

# name -> (hash, iterations, salt bytes): mongod's defaults
MECHANISMS = {"sha1": ("sha1", 10000, 16), "sha256": ("sha256", 15000, 28)}

COMPONENT = "scram"  # the label of these Secrets (the reconciler caches only them)


def verifier(password: bytes, salt: bytes, iterations: int, hash_name: str) -> tuple[bytes, bytes]:
    """``(StoredKey, ServerKey)`` of ``password``."""
    salted = hashlib.pbkdf2_hmac(hash_name, password, salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    stored_key = hashlib.new(hash_name, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hash_name).digest()
    return stored_key, server_key


def _mongo_password(mechanism: str, user: str, password: str) -> bytes:
    if mechanism == "sha1":  # MongoDB's SCRAM-SHA-1 password digest
        return (
            hashlib.md5(f"{user}:mongo:{password}".encode(), usedforsecurity=False)
            .hexdigest()
            .encode()
        )
    return password.encode()


def credentials(uid: str, user: User, password: str) -> dict[str, str]:
    """The Secret's keys: per mechanism salt, iterations, stored and server keys (base64)."""
    out: dict[str, str] = {}
    for mechanism, (hash_name, iterations, size) in MECHANISMS.items():
        seed = f"{uid}/{user.db}.{user.name}/{mechanism}".encode()
        salt = hashlib.sha256(seed).digest()[:size]
        stored, server = verifier(
            _mongo_password(mechanism, user.name, password), salt, iterations, hash_name
        )
        out[f"{mechanism}-salt"] = base64.b64encode(salt).decode()
        out[f"{mechanism}-iterations"] = str(iterations)
        out[f"{mechanism}-stored-key"] = base64.b64encode(stored).decode()
        out[f"{mechanism}-server-key"] = base64.b64encode(server).decode()
    return out


def secret(obj: KubeObject, user: User, password: str) -> list[Manifest]:
    """The Secret, if the user names one."""
    if user.scram_credentials_secret_name is None:
        return []
    name = f"{user.scram_credentials_secret_name}-scram-credentials"
    data = credentials(obj["metadata"]["uid"], user, password)
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": child_metadata(obj, name, child_labels(obj["metadata"]["name"], COMPONENT)),
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        }
    ]

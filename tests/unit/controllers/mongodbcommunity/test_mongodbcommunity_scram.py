"""The SCRAM credentials of the ``-scram-credentials`` Secret: a server holding only the
stored and server keys accepts the client proof and produces the server signature of the
RFC 5802 (SCRAM-SHA-1) and RFC 7677 (SCRAM-SHA-256) example exchanges; the Secret's salts
are stable per object and user, and differ between them."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from appstack.api.mongodbcommunity import User
from appstack.controllers.mongodbcommunity import scram

# (hash, salt, client-first-bare, server-first, client-final-without-proof, proof, signature)
EXCHANGES = [
    (
        "sha1",
        "QSXCR+Q6sek8bf92",
        "n=user,r=fyko+d2lbbFgONRv9qkxdawL",
        "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
        "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j",
        "v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
        "rmF9pqV8S7suAoZWja4dJRkFsKQ=",
    ),
    (
        "sha256",
        "W22ZaJ0SNY7soEsUEjb6gQ==",
        "n=user,r=rOprNGfwEbeRWgbNEkqO",
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
    ),
]


@pytest.mark.parametrize(
    ("hash_name", "salt", "first", "server", "final", "proof", "signature"), EXCHANGES
)
def test_a_server_with_only_the_verifier_accepts_the_rfc_exchange(  # noqa: PLR0917
    hash_name: str, salt: str, first: str, server: str, final: str, proof: str, signature: str
) -> None:
    stored, server_key = scram.verifier(b"pencil", base64.b64decode(salt), 4096, hash_name)
    auth_message = f"{first},{server},{final}".encode()
    client_signature = hmac.new(stored, auth_message, hash_name).digest()
    client_key = bytes(
        a ^ b for a, b in zip(base64.b64decode(proof), client_signature, strict=True)
    )
    assert hashlib.new(hash_name, client_key).digest() == stored  # the proof checks out
    assert hmac.new(server_key, auth_message, hash_name).digest() == base64.b64decode(signature)


def _user(name: str = "my-user") -> User:
    return User.model_validate(
        {
            "name": name,
            "passwordSecretRef": {"name": "p"},
            "roles": [{"name": "root", "db": "admin"}],
            "scramCredentialsSecretName": "my-scram",
        }
    )


def test_the_secret_has_both_mechanisms_with_stable_distinct_salts() -> None:
    first = scram.credentials("uid-1", _user(), "pw")
    assert first == scram.credentials("uid-1", _user(), "pw")  # stable: applied unchanged
    assert sorted(first) == sorted(
        f"{m}-{k}"
        for m in ("sha1", "sha256")
        for k in ("salt", "iterations", "stored-key", "server-key")
    )
    assert (first["sha1-iterations"], first["sha256-iterations"]) == ("10000", "15000")
    assert len(base64.b64decode(first["sha256-salt"])) == 28
    assert scram.credentials("uid-2", _user(), "pw")["sha256-salt"] != first["sha256-salt"]
    assert scram.credentials("uid-1", _user("other"), "pw")["sha1-salt"] != first["sha1-salt"]
    changed = scram.credentials("uid-1", _user(), "new")
    assert changed["sha256-stored-key"] != first["sha256-stored-key"]
    assert "pw" not in "".join(first.values())


def test_the_secret_is_named_after_scram_credentials_secret_name_and_owned() -> None:
    obj = {
        "apiVersion": "appstack.dev/v1",
        "kind": "MongoDBCommunity",
        "metadata": {"name": "example-mongodb", "namespace": "ns", "uid": "u"},
    }
    (secret,) = scram.secret(obj, _user(), "pw")
    assert secret["metadata"]["name"] == "my-scram-scram-credentials"
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "u"
    plain = _user().model_copy(update={"scram_credentials_secret_name": None})
    assert scram.secret(obj, plain, "pw") == []

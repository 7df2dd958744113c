"""The self-signed certificate ``/metrics`` is served with when none is given
(runtime/selfsigned.py, run in a child process by runtime/servingcert.py): a year's
ECDSA P-256 server certificate for its names — DNS names and IP addresses, each once, the
first the subject — that is no CA, and its key."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from appstack.runtime import selfsigned
from appstack.runtime.selfsigned import VALIDITY, make


def test_a_server_certificate_for_its_names_valid_for_a_year() -> None:
    cert_pem, key_pem = make(["metrics.ns.svc", "10.0.0.7", "localhost", "::1", "localhost"])
    cert = x509.load_pem_x509_certificate(cert_pem)
    subject = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert [a.value for a in subject] == ["metrics.ns.svc"]
    assert cert.issuer == cert.subject  # self-signed
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["metrics.ns.svc", "localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["10.0.0.7", "::1"]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    now = datetime.datetime.now(datetime.timezone.utc)
    assert cert.not_valid_before_utc <= now < cert.not_valid_after_utc
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert VALIDITY <= lifetime <= VALIDITY + datetime.timedelta(minutes=10)

    key = serialization.load_pem_private_key(key_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert isinstance(key.curve, ec.SECP256R1)
    assert key.public_key().public_numbers() == cert.public_key().public_numbers()


def test_a_long_first_name_is_cut_to_a_common_names_64_characters() -> None:
    long = "a" * 63 + "." + "b" * 20
    cert = x509.load_pem_x509_certificate(make([long])[0])
    subject = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert [a.value for a in subject] == [long[:64]]
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [long]  # the name itself, whole


def test_run_as_a_program_it_prints_the_pems_as_json() -> None:
    done = subprocess.run(
        [sys.executable, str(Path(selfsigned.__file__)), "operator-0", "127.0.0.1"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    printed = json.loads(done.stdout)
    assert set(printed) == {"cert", "key", "not_before", "not_after"}
    cert = x509.load_pem_x509_certificate(printed["cert"].encode())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["operator-0"]
    assert "PRIVATE KEY" in printed["key"]
    assert datetime.datetime.fromisoformat(printed["not_after"]) == cert.not_valid_after_utc


def test_a_shorter_validity_is_backdated_by_a_tenth_of_it() -> None:
    done = subprocess.run(
        [sys.executable, str(Path(selfsigned.__file__)), "--valid-seconds=60", "svc.ns.svc"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    cert = x509.load_pem_x509_certificate(json.loads(done.stdout)["cert"].encode())
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime == datetime.timedelta(seconds=66)

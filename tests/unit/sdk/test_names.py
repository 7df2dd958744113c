"""The patterns names, references and images are checked with (sdk/names.py): an image
reference that can be pulled, and a reference that is a DNS subdomain."""

from __future__ import annotations

import re

import pytest

from appstack.sdk.names import DNS_SUBDOMAIN, IMAGE

_DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    "image",
    [
        "x",
        "nginx:1.27",
        "library/nginx",
        "registry.example.com:5000/team/app:v1.2-rc_3",
        "Registry.Example.com/app",
        f"app@{_DIGEST}",
        f"quay.io/a/b:t@{_DIGEST}",
        "my__app",
    ],
)
def test_images_that_can_be_pulled(image: str) -> None:
    assert re.match(IMAGE, image)


@pytest.mark.parametrize(
    "image", [" nginx ", "nginx:", "Nginx", "ng inx", "nginx::1", "/nginx", "app@sha256:ab", ""]
)
def test_images_that_cannot(image: str) -> None:
    assert not re.match(IMAGE, image)


@pytest.mark.parametrize("name", [".", "..", "a..b", "-a", "A", "a_b"])
def test_references_must_be_dns_subdomains(name: str) -> None:
    assert not re.match(DNS_SUBDOMAIN, name)

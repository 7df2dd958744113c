"""An S3 client for EtcdCluster snapshots: put (single or multipart), get, list, delete,
signed with AWS Signature Version 4, over HTTP(S) from the standard library only.

It runs inside the backup Jobs' and the restore init containers' pods (``appstack
etcd-backup upload|download``, :mod:`appstack.cli.etcd_backup`), never in the operator: the
object store is reached from the tenant's namespace with the tenant's credentials, and the
operator neither holds the credentials nor talks to an address a tenant chose. Path-style
addressing (``<endpoint>/<bucket>/<key>``), which every S3-compatible server accepts.

Why our own signer and not boto3: the operator image stays small (botocore alone is
~80 MiB installed), the five calls a snapshot needs are all that is used, and it is tested
against a real S3 server (Versity S3 Gateway) on the test bed.
An upload is atomic from a reader's point of view: a single PUT is stored whole or not at
all, a multipart upload that fails is aborted, so a snapshot that did not complete is never
listed.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import hmac
import http.client
import ssl
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

CHUNK = 1 << 20
#: Above this size an object goes up in parts (S3 refuses a single PUT over 5 GiB).
MULTIPART_ABOVE = 512 << 20
PART_SIZE = 64 << 20
MAX_ANSWER = 16 << 20  # a listing page (1,000 keys) is a few hundred KiB
_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


class ObjectStoreError(Exception):
    """A request failed: ``code`` is S3's error code (``NoSuchBucket``,
    ``InvalidAccessKeyId``, ``SignatureDoesNotMatch`` ...) or ``Unreachable``."""

    def __init__(self, code: str, message: str, status: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.status = status


@dataclass(frozen=True)
class Store:
    """Where and as whom: ``endpoint`` is ``http(s)://host[:port]``."""

    endpoint: str
    bucket: str
    region: str
    access_key: str
    secret_key: str
    ca_file: str | None = None
    timeout: float = 60.0

    def _connection(self) -> http.client.HTTPConnection:
        url = urllib.parse.urlsplit(self.endpoint)
        if url.scheme == "https":
            context = ssl.create_default_context(cafile=self.ca_file)
            return http.client.HTTPSConnection(
                url.hostname or "", url.port, timeout=self.timeout, context=context
            )
        return http.client.HTTPConnection(url.hostname or "", url.port, timeout=self.timeout)

    def _host(self) -> str:
        return urllib.parse.urlsplit(self.endpoint).netloc

    def _path(self, key: str = "") -> str:
        base = urllib.parse.urlsplit(self.endpoint).path.rstrip("/")
        path = f"{base}/{self.bucket}"
        return f"{path}/{_quote(key, safe='/')}" if key else path

    def request(
        self,
        method: str,
        key: str = "",
        query: dict[str, str] | None = None,
        body: bytes | IO[bytes] = b"",
        *,
        size: int | None = None,
        payload_hash: str | None = None,
        headers: dict[str, str] | None = None,
        sink: IO[bytes] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """One signed request; the status, headers and body of a 2xx answer (else
        :class:`ObjectStoreError` with S3's code and message); with ``sink`` a 2xx body is
        streamed into it instead."""
        query = query or {}
        if payload_hash is None:
            payload_hash = hashlib.sha256(body if isinstance(body, bytes) else b"").hexdigest()
        now = datetime.datetime.now(datetime.timezone.utc)
        signed = sign(
            method,
            self._host(),
            self._path(key),
            query,
            payload_hash,
            self.region,
            self.access_key,
            self.secret_key,
            now,
            headers or {},
        )
        length = size if size is not None else len(body) if isinstance(body, bytes) else 0
        signed["Content-Length"] = str(length)
        target = self._path(key) + ("?" + _canonical_query(query) if query else "")
        connection = self._connection()
        try:
            connection.request(method, target, body=body, headers=signed)
            response = connection.getresponse()
            if sink is not None and response.status < 300:
                while chunk := response.read(CHUNK):
                    sink.write(chunk)
                data = b""
            else:
                data = response.read(MAX_ANSWER + 1)
                if len(data) > MAX_ANSWER:
                    raise ObjectStoreError("AnswerTooLarge", f"over {MAX_ANSWER} bytes")
        except (OSError, http.client.HTTPException) as error:
            raise ObjectStoreError("Unreachable", f"{self.endpoint}: {error}") from error
        finally:
            connection.close()
        if response.status >= 300:
            code, message = _error(data, response.status, response.reason)
            raise ObjectStoreError(code, message, response.status)
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data

    def put_file(self, key: str, path: Path) -> int:
        """Upload ``path`` as ``key`` (in parts when large); its size."""
        size = path.stat().st_size
        if size > MULTIPART_ABOVE:
            self._multipart(key, path)
            return size
        digest = _file_sha256(path)
        with path.open("rb") as body:
            self.request("PUT", key, body=body, size=size, payload_hash=digest)
        return size

    def _multipart(self, key: str, path: Path) -> None:
        _, _, answer = self.request("POST", key, {"uploads": ""})
        upload = _text(_parse(answer), "UploadId")
        parts: list[tuple[int, str]] = []
        try:
            with path.open("rb") as source:
                number = 1
                while chunk := source.read(PART_SIZE):
                    query = {"partNumber": str(number), "uploadId": upload}
                    _, headers, _ = self.request("PUT", key, query, chunk)
                    parts.append((number, headers.get("etag", "")))
                    number += 1
            done = "".join(
                f"<Part><PartNumber>{n}</PartNumber><ETag>{tag}</ETag></Part>" for n, tag in parts
            )
            body = f"<CompleteMultipartUpload>{done}</CompleteMultipartUpload>".encode()
            self.request("POST", key, {"uploadId": upload}, body)
        except BaseException:  # no half-written object: the parts are dropped
            with contextlib.suppress(ObjectStoreError):  # gone: it drops them itself
                self.request("DELETE", key, {"uploadId": upload})
            raise

    def get_file(self, key: str, target: Path) -> int:
        """Download ``key`` into ``target`` (written next to it, renamed when complete)."""
        partial = target.with_name(target.name + ".part")
        try:
            with partial.open("wb") as sink:
                self.request("GET", key, sink=sink)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        partial.rename(target)
        return target.stat().st_size

    def list(self, prefix: str) -> list[tuple[str, int, str]]:
        """Every object under ``prefix`` as (key, size, last modified), in key order."""
        found: list[tuple[str, int, str]] = []
        token = ""
        while True:
            query = {"list-type": "2", "prefix": prefix}
            if token:
                query["continuation-token"] = token
            _, _, answer = self.request("GET", "", query)
            root = _parse(answer)
            for item in _all(root, "Contents"):
                found.append(
                    (_text(item, "Key"), int(_text(item, "Size") or 0), _text(item, "LastModified"))
                )
            token = _text(root, "NextContinuationToken")
            if _text(root, "IsTruncated") != "true" or not token:
                return sorted(found)

    def delete(self, key: str) -> None:
        self.request("DELETE", key)


def _parse(data: bytes) -> ET.Element:
    """An answer's XML; the standard library's parser resolves no external entity, and
    expat (>= 2.4.1) bounds entity expansion. The answer is the store's the user chose,
    parsed in the user's own pod, and at most :data:`MAX_ANSWER` bytes."""
    return ET.fromstring(data)  # noqa: S314 - see the docstring


def _all(node: ET.Element, tag: str) -> Iterator[ET.Element]:
    yield from node.findall(f"{_NS}{tag}")
    yield from node.findall(tag)


def _text(node: ET.Element, tag: str) -> str:
    for found in _all(node, tag):
        return found.text or ""
    return ""


def _error(data: bytes, status: int, reason: str) -> tuple[str, str]:
    try:
        root = _parse(data)
    except ET.ParseError:
        return f"HTTP{status}", reason
    code = (root.findtext("Code") or f"HTTP{status}").strip()
    message = (root.findtext("Message") or reason).strip()
    return code, message


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _quote(text: str, safe: str = "") -> str:
    return urllib.parse.quote(text, safe="-_.~" + safe)


def _canonical_query(query: dict[str, str]) -> str:
    return "&".join(f"{_quote(k)}={_quote(v)}" for k, v in sorted(query.items()))


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sign(  # noqa: PLR0917 - the parts of a SigV4 signature, in the order AWS lists them
    method: str,
    host: str,
    path: str,
    query: dict[str, str],
    payload_hash: str,
    region: str,
    access_key: str,
    secret_key: str,
    now: datetime.datetime,
    extra: dict[str, str],
) -> dict[str, str]:
    """The headers of a request signed with AWS Signature Version 4 (service ``s3``)."""
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    day = now.strftime("%Y%m%d")
    headers = {
        "host": host,
        "x-amz-content-sha256": payload_hash,
        "x-amz-date": stamp,
        **{k.lower(): v for k, v in extra.items()},
    }
    names = sorted(headers)
    canonical = "\n".join(
        [
            method,
            path,
            _canonical_query(query),
            "".join(f"{n}:{headers[n].strip()}\n" for n in names),
            ";".join(names),
            payload_hash,
        ]
    )
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = _hmac(("AWS4" + secret_key).encode(), day)
    for part in (region, "s3", "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    authorization = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    out = {n: headers[n] for n in names if n != "host"}
    return {"Host": host, **out, "Authorization": authorization}

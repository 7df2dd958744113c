"""The kubeconfig loader (appstack.runtime.kubeconfig): files merged as kubectl merges them,
relative paths, embedded data, token files and exec plugins (a real subprocess)."""

from __future__ import annotations

import base64
import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.runtime.kubeconfig import KubeconfigError, load


def _write(path: Path, contexts: list[str], user: dict[str, Any], current: str = "") -> Path:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current,
        "clusters": [
            {
                "name": f"c-{path.stem}",
                "cluster": {
                    "server": f"https://{path.stem}.example:6443/",
                    "certificate-authority": "ca.crt",
                    "tls-server-name": "api.internal",
                    "proxy-url": "http://proxy:3128",
                },
            }
        ],
        "users": [{"name": f"u-{path.stem}", "user": user}],
        "contexts": [
            {"name": name, "context": {"cluster": f"c-{path.stem}", "user": f"u-{path.stem}"}}
            for name in contexts
        ],
    }
    path.write_text(yaml.safe_dump(document))
    return path


async def test_kubeconfig_files_merge_the_first_naming_an_entry_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "one").mkdir()
    first = _write(tmp_path / "one" / "a.yaml", ["shared"], {"token": "from-a"})
    second = _write(tmp_path / "b.yaml", ["shared", "own"], {"token": "from-b"}, current="own")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'missing'}:{second}")

    loaded = await load()  # current-context: the first file's is empty, so the second's
    assert loaded is not None
    connection, source = loaded
    assert connection.host == "https://b.example:6443"
    assert connection.api_key["BearerToken"] == "Bearer from-b"
    assert source is None  # a literal token cannot change

    loaded = await load(context="shared")
    assert loaded is not None
    connection, _ = loaded
    assert connection.host == "https://a.example:6443"
    assert connection.ssl_ca_cert == str(tmp_path / "one" / "ca.crt")  # relative to its file
    assert connection.tls_server_name == "api.internal"
    assert connection.proxy == "http://proxy:3128"
    assert connection.verify_ssl

    with pytest.raises(KubeconfigError, match="no context 'nope'"):
        await load(context="nope")


async def test_certificate_data_and_token_files(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    user = {
        "client-certificate-data": base64.b64encode(b"CERT").decode(),
        "client-key-data": base64.b64encode(b"KEY").decode(),
        "tokenFile": "token",
    }
    loaded = await load(str(_write(tmp_path / "k.yaml", ["x"], user, current="x")))
    assert loaded is not None
    connection, source = loaded
    assert (connection.cert_data, connection.key_data) == (b"CERT", b"KEY")
    assert connection.api_key["BearerToken"] == "Bearer first"
    assert source is not None
    token.write_text("second\n")
    assert await source(False) == "Bearer second"
    assert await connection.auth_settings() == {
        "BearerToken": {"key": "Authorization", "value": "Bearer first"}
    }  # the credentials hook (not installed here) is what writes a new token


async def test_an_auth_provider_user_is_left_to_kubernetes_asyncio(tmp_path: Path) -> None:
    user = {"auth-provider": {"name": "oidc", "config": {}}}
    assert await load(str(_write(tmp_path / "k.yaml", ["x"], user, current="x"))) is None


async def test_a_basic_auth_user_needs_the_legacy_auth_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kubernetes_asyncio is an extra (``appstack[legacy-auth]``): with it a basic-auth user
    loads; without it the error says which extra to install, not a bare ImportError."""
    from appstack.runtime.transport import LegacyAuthMissing, load_configuration  # noqa: PLC0415

    path = _write(tmp_path / "k.yaml", ["x"], {"username": "u", "password": "p"}, current="x")
    (tmp_path / "ca.crt").write_text("")  # named by the cluster; not read until connecting
    configuration = await load_configuration(str(path))
    assert configuration.host.startswith("https://k.example:6443")
    for module in ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.config"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    extra = r"appstack\[legacy-auth\]: pip install 'kubernetes_asyncio>=31'"
    with pytest.raises(LegacyAuthMissing, match=extra):
        await load_configuration(str(path))


def _plugin(tmp_path: Path, expiry: str | None) -> Path:
    """A plugin that answers token-<n>, n counting its runs, and records its environment."""
    script = tmp_path / "bin" / "plugin"
    script.parent.mkdir()
    status: dict[str, Any] = {"token": "TOKEN"}
    if expiry:
        status["expirationTimestamp"] = expiry
    answer = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "status": status})
    script.write_text(
        "#!/bin/sh\n"
        'n=$(( $(cat "$0.count" 2>/dev/null || echo 0) + 1 )); echo $n > "$0.count"\n'
        'echo "$KUBERNETES_EXEC_INFO $GREETING $1" > "$0.env"\n'
        f"echo '{answer}' | sed \"s/TOKEN/token-$n/\"\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@pytest.mark.parametrize(
    ("expiry", "runs_after_reload"),
    [("2999-01-01T00:00:00Z", 1), ("2000-01-01T00:00:00Z", 2), (None, 1)],
)
async def test_an_exec_plugin_runs_again_when_expired_or_forced(
    tmp_path: Path, expiry: str | None, runs_after_reload: int
) -> None:
    script = _plugin(tmp_path, expiry)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "bin/plugin",  # relative to the kubeconfig's directory
            "args": ["arg"],
            "env": [{"name": "GREETING", "value": "hello"}],
        }
    }
    loaded = await load(str(_write(tmp_path / "k.yaml", ["x"], user, current="x")))
    assert loaded is not None
    connection, source = loaded
    assert connection.api_key["BearerToken"] == "Bearer token-1"
    info, greeting, arg = Path(f"{script}.env").read_text().rsplit(maxsplit=2)
    assert json.loads(info)["spec"] == {"interactive": False}
    assert (greeting, arg) == ("hello", "arg")

    assert source is not None
    assert await source(False) == f"Bearer token-{runs_after_reload}"  # expired: run again
    forced = await source(True)  # the API server rejected the token: always run again
    assert forced == f"Bearer token-{runs_after_reload + 1}"


async def test_a_failing_exec_plugin_says_why(tmp_path: Path) -> None:
    user = {"exec": {"command": "sh", "args": ["-c", "echo denied >&2; exit 3"]}}
    with pytest.raises(KubeconfigError, match="failed \\(3\\): denied"):
        await load(str(_write(tmp_path / "k.yaml", ["x"], user, current="x")))


def test_the_current_namespace_is_the_current_contexts_else_default(tmp_path: Path) -> None:
    from appstack.runtime.kubeconfig import current_namespace  # noqa: PLC0415

    path = _write(tmp_path / "a.yaml", ["one", "two"], {"token": "t"}, current="two")
    document = yaml.safe_load(path.read_text())
    document["contexts"][1]["context"]["namespace"] = "team-a"
    path.write_text(yaml.safe_dump(document))
    assert current_namespace(str(path)) == "team-a"
    document["current-context"] = "one"
    path.write_text(yaml.safe_dump(document))
    assert current_namespace(str(path)) == "default"
    assert current_namespace(str(tmp_path / "missing.yaml")) == "default"


async def test_a_kubeconfig_that_cannot_be_used_says_why_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(KubeconfigError, match=r"^kubeconfig /nowhere/config does not exist$"):
        await load("/nowhere/config")
    with pytest.raises(
        KubeconfigError,
        match=rf"^no kubeconfig: \$KUBECONFIG is not set and {tmp_path}/.kube/config does not",
    ):
        await load()
    monkeypatch.setenv("KUBECONFIG", "/a:/b")
    with pytest.raises(KubeconfigError, match=r"none of \$KUBECONFIG's files exists \(/a, /b\)"):
        await load()
    (tmp_path / "list").write_text("- 1\n")
    with pytest.raises(KubeconfigError, match="is not a kubeconfig"):
        await load(str(tmp_path / "list"))
    with pytest.raises(KubeconfigError, match=r"^cannot read kubeconfig"):
        await load(str(tmp_path))  # a directory
    config = _write(tmp_path / "one", ["a"], {"token": "t"})
    with pytest.raises(KubeconfigError, match="has no current-context"):
        await load(str(config))

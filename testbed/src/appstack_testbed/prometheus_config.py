"""Prometheus configuration from Prometheus Operator objects, for a Prometheus without the
Prometheus Operator (pure functions).

:func:`scrape_config` translates one ``ServiceMonitor`` endpoint into the ``scrape_config``
the Prometheus Operator would generate for it (path, scheme, interval, timeout, bearer token
or ``authorization``, ``tlsConfig``, params, honorLabels), scraping fixed target addresses
instead of the Pods behind a Service. A field it does not translate is refused (ValueError)
rather than dropped, so a new setting in a shipped ServiceMonitor cannot go unproven.
Files and Secrets an endpoint names inside a Pod (the mounted ServiceAccount token, a CA
from a Secret) are given as local files by the caller.

:func:`rule_groups` takes the groups out of a ``PrometheusRule`` (what ``promtool`` and
``rule_files`` read). Used by :mod:`appstack_testbed.prometheus_server` and the operator's
monitoring tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: ServiceMonitor endpoint fields that select the target (replaced by explicit addresses).
TARGET_FIELDS = frozenset({"port", "targetPort"})
_SIMPLE = {
    "path": "metrics_path",
    "scheme": "scheme",
    "interval": "scrape_interval",
    "scrapeTimeout": "scrape_timeout",
    "honorLabels": "honor_labels",
    "params": "params",
}
_TLS_SIMPLE = {"insecureSkipVerify": "insecure_skip_verify", "serverName": "server_name"}
_TLS_FILES = {"caFile": "ca_file", "certFile": "cert_file", "keyFile": "key_file"}
_TLS_SECRETS = {"ca": "ca_file", "cert": "cert_file"}

SecretFiles = Mapping[tuple[str, str], Path]


def scrape_config(
    job: str,
    endpoint: Mapping[str, Any],
    targets: list[str],
    *,
    files: Mapping[str, Path] | None = None,
    secrets: SecretFiles | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``scrape_config`` for ``endpoint`` (one item of a ServiceMonitor's
    ``spec.endpoints``) scraping ``targets`` (``host:port``).

    ``files`` maps a path the endpoint names (e.g. the Pod's mounted token) to a local
    file; ``secrets`` maps ``(secret name, key)`` to a local file holding that key's value.
    ``overrides`` replaces translated settings last (e.g. a shorter ``scrape_interval`` for
    a test: say so where it is used).
    """
    files = files or {}
    secrets = secrets or {}
    config: dict[str, Any] = {"job_name": job, "static_configs": [{"targets": list(targets)}]}
    for key, value in endpoint.items():
        if key in TARGET_FIELDS:
            continue
        if key in _SIMPLE:
            config[_SIMPLE[key]] = value
        elif key == "bearerTokenFile":
            config["authorization"] = {"type": "Bearer", "credentials_file": _file(value, files)}
        elif key == "bearerTokenSecret":
            config["authorization"] = {
                "type": "Bearer",
                "credentials_file": _secret(value, secrets),
            }
        elif key == "authorization":
            config["authorization"] = {
                "type": value.get("type", "Bearer"),
                "credentials_file": _secret(value["credentials"], secrets),
            }
        elif key == "tlsConfig":
            config["tls_config"] = tls_config(value, files, secrets)
        else:
            raise ValueError(f"ServiceMonitor endpoint field {key!r} is not translated")
    config.update(overrides or {})
    return config


def tls_config(
    tls: Mapping[str, Any], files: Mapping[str, Path], secrets: SecretFiles
) -> dict[str, Any]:
    """A ServiceMonitor ``tlsConfig`` as Prometheus' ``tls_config``."""
    out: dict[str, Any] = {}
    for key, value in tls.items():
        if key in _TLS_SIMPLE:
            out[_TLS_SIMPLE[key]] = value
        elif key in _TLS_FILES:
            out[_TLS_FILES[key]] = _file(value, files)
        elif key in _TLS_SECRETS:
            if set(value) != {"secret"}:
                raise ValueError(f"tlsConfig.{key} from {sorted(value)} is not translated")
            out[_TLS_SECRETS[key]] = _secret(value["secret"], secrets)
        elif key == "keySecret":
            out["key_file"] = _secret(value, secrets)
        else:
            raise ValueError(f"ServiceMonitor tlsConfig field {key!r} is not translated")
    return out


def rule_groups(prometheus_rule: Mapping[str, Any]) -> dict[str, Any]:
    """A ``PrometheusRule``'s ``spec.groups`` as a Prometheus rule file (``groups: [...]``)."""
    if prometheus_rule.get("kind") != "PrometheusRule":
        raise ValueError(f"not a PrometheusRule: {prometheus_rule.get('kind')!r}")
    return {"groups": list(prometheus_rule["spec"]["groups"])}


def alert_names(groups: Mapping[str, Any]) -> list[str]:
    """The names of the alerting rules in a rule file's ``groups``."""
    return [rule["alert"] for g in groups["groups"] for rule in g["rules"] if "alert" in rule]


def _file(path: str, files: Mapping[str, Path]) -> str:
    if path not in files:
        raise ValueError(f"no local file given for {path!r}")
    return str(files[path])


def _secret(ref: Mapping[str, Any], secrets: SecretFiles) -> str:
    key = (str(ref["name"]), str(ref["key"]))
    if key not in secrets:
        raise ValueError(f"no local file given for key {key[1]!r} of Secret {key[0]!r}")
    return str(secrets[key])

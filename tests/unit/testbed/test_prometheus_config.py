"""ServiceMonitor endpoints translated into Prometheus scrape configs, PrometheusRule groups
taken out, and the Prometheus build pinned (the test bed's monitoring helpers, pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from appstack.manifests import dashboard, monitoring
from appstack_testbed import build, prometheus
from appstack_testbed.prometheus_config import alert_names, rule_groups, scrape_config
from appstack_testbed.prometheus_server import unix_time
from appstack_testbed.versions import Toolchain

TOKEN = Path("/tmp/token")  # noqa: S108 - a name only, never opened


def test_the_shipped_endpoint_becomes_an_authorized_scrape_of_the_given_target() -> None:
    (endpoint,) = monitoring.service_monitor()["spec"]["endpoints"]
    config = scrape_config("op", endpoint, ["127.0.0.1:9000"], files={monitoring.TOKEN_FILE: TOKEN})
    assert config["job_name"] == "op"
    assert config["static_configs"] == [{"targets": ["127.0.0.1:9000"]}]
    assert config["metrics_path"] == endpoint["path"]
    assert config["scrape_interval"] == endpoint["interval"]
    assert config["authorization"] == {"type": "Bearer", "credentials_file": str(TOKEN)}
    assert "port" not in config


def test_scheme_and_tls_are_translated() -> None:
    endpoint = {
        "port": "metrics",
        "scheme": "https",
        "tlsConfig": {
            "insecureSkipVerify": True,
            "serverName": "m.ns.svc",
            "ca": {"secret": {"name": "cert", "key": "ca.crt"}},
        },
    }
    config = scrape_config("op", endpoint, ["a:1"], secrets={("cert", "ca.crt"): Path("/ca")})
    assert config["scheme"] == "https"
    assert config["tls_config"] == {
        "insecure_skip_verify": True,
        "server_name": "m.ns.svc",
        "ca_file": "/ca",
    }


def test_authorization_from_a_secret_and_overrides() -> None:
    endpoint = {"authorization": {"credentials": {"name": "s", "key": "token"}}, "interval": "30s"}
    config = scrape_config(
        "op",
        endpoint,
        ["a:1"],
        secrets={("s", "token"): Path("/t")},
        overrides={"scrape_interval": "1s"},
    )
    assert config["authorization"] == {"type": "Bearer", "credentials_file": "/t"}
    assert config["scrape_interval"] == "1s"


@pytest.mark.parametrize(
    "endpoint",
    [
        {"relabelings": []},
        {"tlsConfig": {"ca": {"configMap": {"name": "c", "key": "ca"}}}},
        {"tlsConfig": {"minVersion": "TLS13"}},
        {"bearerTokenFile": "/not/given"},
        {"bearerTokenSecret": {"name": "s", "key": "t"}},
    ],
)
def test_what_is_not_translated_is_refused_not_dropped(endpoint: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"not translated|no local file"):
        scrape_config("op", endpoint, ["a:1"])


def test_rule_groups_come_out_of_the_prometheus_rule() -> None:
    groups = rule_groups(dashboard.prometheus_rule())
    assert alert_names(groups) == [a["alert"] for a in dashboard.ALERTS]
    with pytest.raises(ValueError, match="not a PrometheusRule"):
        rule_groups(monitoring.service_monitor())


def test_the_module_version_names_its_prometheus_release() -> None:
    assert prometheus.release_name("v0.316.0") == "3.16.0"
    assert prometheus.release_name("v0.300.1") == "3.0.1"
    flags = " ".join(prometheus.component().ldflags)
    assert f"version.Version={prometheus.release_name(prometheus.VERSION)}" in flags


def test_build_tags_enter_the_stamp_only_when_set() -> None:
    """Existing builds keep their stamps (no rebuild); a tagged build stamps its tags."""
    (etcd,) = [c for c in build.components(Toolchain()) if c.name == "etcd"]
    assert "tags" not in etcd.stamp
    assert '"tags": ["remove_all_sd"]' in prometheus.component().stamp
    assert build.installed_binaries(prometheus.component()) == ["prometheus", "promtool"]


def test_prometheus_times_are_read_with_nanoseconds_and_offsets() -> None:
    assert unix_time("2026-11-25T20:39:11.5Z") == 1795639151.5
    assert unix_time("2026-11-25T21:39:11.123456789+01:00") == pytest.approx(1795639151.123456789)
    assert unix_time("0001-01-01T00:00:00Z") < 0  # never evaluated

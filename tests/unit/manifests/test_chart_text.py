"""The Helm chart's generated text (pure; the SDK's :func:`appstack.sdk.chart_files` of
appstack's install): every templated object carries the chart's labels helper and no label
of the generated install's is left, the chart README lists every value with its default
and a description, and the pod extensions' helpers (the SDK's :class:`appstack.sdk.HelmText`)
render nothing unless their value is set."""

from __future__ import annotations

import re
from typing import Any

import yaml

from appstack.manifests import chart
from appstack.sdk import HelmText
from tests.support.paths import REPO_ROOT

CHART = REPO_ROOT / "charts" / "appstack"
#: A row of the README's values table: `path` | default | what it does.
ROW = re.compile(r"^\| `([^`]+)` \| (.+?) \| (.+) \|$")


def test_every_templated_object_gets_the_helper_and_no_generated_label_is_left() -> None:
    files = chart.render()
    assert 'define "appstack.labels"' in files["templates/_helpers.tpl"]
    templates = [p for p in files if p.startswith("templates/") and p.endswith(".yaml")]
    assert templates
    for path in templates:
        text = files[path]
        assert "app.kubernetes.io/managed-by: appstack" not in text, path
        assert 'include "appstack.' in text, path
    pod = files["templates/tests/test-metrics.yaml"]
    assert 'include "appstack.testLabels"' in pod  # no selector of the operator's pods takes it
    assert "app.kubernetes.io/name: appstack-operator" not in pod


def _leaf(values: dict[str, Any], path: str) -> Any:
    node: Any = values
    for key in path.split("."):
        node = node[key]
    return node


def test_the_chart_readme_lists_every_value_with_its_default_and_a_description() -> None:
    readme = (CHART / "README.md").read_text()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values == chart.values()
    rows = [m.groups() for line in readme.splitlines() if (m := ROW.match(line))]
    assert rows
    for path, default, description in rows:
        value = _leaf(values, path)
        if default != "see values.yaml":
            assert yaml.safe_load(default.strip("`")) == value, path
        assert description.strip(), f"{path} has no description"
    assert {path.split(".")[0] for path, _, _ in rows} == set(values)
    # how the CRDs go with the release, and how a second release leaves them to the first
    assert "crd.enable=false" in readme
    assert "`crd.keep`" in readme


def test_the_pod_extension_helpers_render_nothing_unless_a_value_is_set() -> None:
    """The text helpers behind extraEnv/extraVolume(Mount)s, the probes' timing and
    revisionHistoryLimit (tests/e2e/test_helm.py renders them with helm)."""
    env = "env:\n- name: A\n  value: b\n- '@@EXTRA@@'\n"
    assert HelmText.items(env, "EXTRA", ".Values.extraEnv") == (
        "env:\n- name: A\n  value: b\n"
        "{{- with .Values.extraEnv }}\n{{- toYaml . | nindent 0 }}\n{{- end }}\n"
    )
    probe = "  probe:\n    httpGet: {}\n    '@@P@@': ''\n"
    assert HelmText.merged_keys(probe, "P", ".Values.p") == (
        "  probe:\n    httpGet: {}\n"
        "    {{- with .Values.p }}\n    {{- toYaml . | nindent 4 }}\n    {{- end }}\n"
    )
    assert HelmText.set_scalar("  n: '@@N@@'\n", "n", "N", ".Values.n") == (
        '  {{- if not (kindIs "invalid" .Values.n) }}\n  n: {{ .Values.n }}\n  {{- end }}\n'
    )
    volumes = "v:\n- name: certs\n  secret: x\n- name: other\n"
    assert HelmText.wrap_list_item(volumes, "name: certs", "{{- if c }}", "{{- end }}") == (
        "v:\n{{- if c }}\n- name: certs\n  secret: x\n{{- end }}\n- name: other\n"
    )
    deployment = chart.render()["templates/manager/operator.yaml"]
    assert "@@" not in deployment
    # the operator pods' labels: podLabels merged over commonLabels, not both (a key twice)
    assert "merge (dict) .Values.podLabels .Values.commonLabels" in deployment

"""The Helm chart's generated text (pure): Helm's standard labels replace the generated
ones in every labels block (selectors untouched), the chart README lists every value
with its default and a description, and the pod extensions' helpers render nothing
unless their value is set."""

from __future__ import annotations

import yaml

from appstack.manifests import chart
from appstack.manifests.chart_labels import (
    INCLUDE,
    INCLUDE_COMMON,
    standard_labels,
    with_chart_labels,
)
from appstack.manifests.chart_readme import rows
from appstack.manifests.chart_values import defaults
from appstack.manifests.helmtext import items, merged_keys, set_scalar, wrap_list_item
from tests.support.paths import REPO_ROOT

CHART = REPO_ROOT / "charts" / "appstack"


def test_standard_labels_replace_the_generated_ones_and_keep_the_rest() -> None:
    text = (
        "metadata:\n"
        "  labels:\n"
        "    app.kubernetes.io/part-of: appstack\n"
        "    app.kubernetes.io/managed-by: appstack\n"
        "    app.kubernetes.io/name: appstack-operator\n"
        "    grafana_dashboard: '1'\n"
        "spec:\n"
        "  selector:\n"
        "    matchLabels:\n"
        "      app.kubernetes.io/name: appstack-operator\n"
        "  other:\n"
        "    labels:\n"
        "      team: a\n"
    )
    assert standard_labels(text) == (
        "metadata:\n"
        "  labels:\n"
        f"    {INCLUDE_COMMON % 4}\n"  # the operator's own object: its name stays
        "    app.kubernetes.io/name: appstack-operator\n"
        "    grafana_dashboard: '1'\n"
        "spec:\n"
        "  selector:\n"
        "    matchLabels:\n"
        "      app.kubernetes.io/name: appstack-operator\n"
        "  other:\n"
        "    labels:\n"
        "      team: a\n"
    )


def test_every_templated_object_gets_the_helper_and_no_generated_label_is_left() -> None:
    files = chart.render()
    assert 'define "appstack.labels"' in files["templates/_helpers.tpl"]
    for path, text in files.items():
        if path.startswith("templates/") and path.endswith(".yaml"):
            assert "app.kubernetes.io/managed-by: appstack" not in text, path
            assert 'include "appstack.' in text, path
    generated = {"metadata": {"labels": {"app.kubernetes.io/part-of": "appstack", "x": "y"}}}
    labels = with_chart_labels(generated, "r")["metadata"]["labels"]
    assert (labels["x"], labels["app.kubernetes.io/instance"]) == ("y", "r")
    assert labels["app.kubernetes.io/managed-by"] == "Helm"
    assert labels["app.kubernetes.io/name"] == "appstack"  # not the operator's: unselected
    pod = files["templates/tests/test-metrics.yaml"]
    assert INCLUDE % 4 in pod
    assert "app.kubernetes.io/name: appstack-operator" not in pod


def test_the_chart_readme_lists_every_value_with_its_default_and_a_description() -> None:
    listed = rows()
    values = defaults()
    for path, default, description in listed:
        node = values
        for key in path.split("."):
            node = node[key]
        assert node == default, path
        assert description, f"{path} has no description"
    tops = {path.split(".")[0] for path, _, _ in listed}
    assert tops == set(values)
    readme = (CHART / "README.md").read_text()
    for path, _, _ in listed:
        assert f"| `{path}` |" in readme
    assert "helm show crds" in readme  # how CRDs are upgraded: Helm never does
    assert yaml.safe_load((CHART / "values.yaml").read_text()) == values


def test_the_pod_extension_helpers_render_nothing_unless_a_value_is_set() -> None:
    """The text helpers behind extraEnv/extraVolume(Mount)s, the probes' timing and
    revisionHistoryLimit (tests/e2e/test_helm.py renders them with helm)."""
    env = "env:\n- name: A\n  value: b\n- '@@EXTRA@@'\n"
    assert items(env, "EXTRA", ".Values.extraEnv") == (
        "env:\n- name: A\n  value: b\n"
        "{{- with .Values.extraEnv }}\n{{- toYaml . | nindent 0 }}\n{{- end }}\n"
    )
    probe = "  probe:\n    httpGet: {}\n    '@@P@@': ''\n"
    assert merged_keys(probe, "P", ".Values.p") == (
        "  probe:\n    httpGet: {}\n"
        "    {{- with .Values.p }}\n    {{- toYaml . | nindent 4 }}\n    {{- end }}\n"
    )
    assert set_scalar("  n: '@@N@@'\n", "n", "N", ".Values.n") == (
        '  {{- if not (kindIs "invalid" .Values.n) }}\n  n: {{ .Values.n }}\n  {{- end }}\n'
    )
    volumes = "v:\n- name: certs\n  secret: x\n- name: other\n"
    assert wrap_list_item(volumes, "name: certs", "{{- if c }}", "{{- end }}") == (
        "v:\n{{- if c }}\n- name: certs\n  secret: x\n{{- end }}\n- name: other\n"
    )
    deployment = chart.render()["templates/deployment.yaml"]
    assert "@@" not in deployment
    # the operator pods' labels: podLabels merged over commonLabels, not both (a key twice)
    assert "merge (dict) .Values.podLabels .Values.commonLabels" in deployment
    assert deployment.count(INCLUDE_COMMON % 8) == 0

"""The Helm chart's generated text (pure): Helm's standard labels replace the generated
ones in every labels block (selectors untouched), and the chart README lists every value
with its default and a description."""

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

"""The CLI without a cluster: `render`, `manifests`, option validation, missing extras."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from appstack.cli import main
from tests.support.paths import REPO_ROOT as ROOT


def test_render_prints_the_children_of_the_seed_sample() -> None:
    result = CliRunner().invoke(main, ["render", "-f", str(ROOT / "examples/appservice.yaml")])
    assert result.exit_code == 0, result.output
    deployment, service = yaml.safe_load_all(result.output)
    assert deployment["kind"] == "Deployment"
    assert deployment["spec"]["replicas"] == 2
    assert service["spec"]["ports"][0]["nodePort"] == 30002


def test_render_reports_field_level_errors_and_fails() -> None:
    bad = (
        "apiVersion: appstack.dev/v1\nkind: AppService\nmetadata: {name: bad}\n"
        "spec: {image: x, size: -2}\n---\n"
        "apiVersion: appstack.dev/v1\nkind: AppService\nmetadata: {name: ports}\n"
        "spec: {image: x, ports: [{port: 80}, {port: 81}]}\n"
    )
    result = CliRunner().invoke(main, ["render", "-f", "-"], input=bad)
    assert result.exit_code == 1
    assert "AppService bad: spec.size: Input should be greater than or equal to 0" in result.output
    assert "AppService ports: spec.ports: every port needs a name" in result.output


def test_render_rejects_unknown_appstack_kinds_and_passes_other_objects_through() -> None:
    unknown = "apiVersion: appstack.dev/v1\nkind: AppServcie\nmetadata: {name: x}\n"
    result = CliRunner().invoke(main, ["render", "-f", "-"], input=unknown)
    assert result.exit_code == 1
    assert "not supported" in result.output
    plain = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
    result = CliRunner().invoke(main, ["render", "-f", "-"], input=plain)
    assert result.exit_code == 0
    assert yaml.safe_load(result.output)["kind"] == "ConfigMap"


def test_render_names_another_operators_kind_it_passes_on() -> None:
    other = "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: c}\n"
    result = CliRunner().invoke(main, ["render", "-f", "-"], input=other)
    assert result.exit_code == 0
    assert yaml.safe_load(result.stdout)["kind"] == "Certificate"
    assert result.stderr == (
        "note: document 1 (Certificate c): Certificate (cert-manager.io/v1) is not a kind "
        "appstack serves: passed on as it is, for the operator that serves it\n"
    )
    for builtin in ("v1", "apps/v1", "networking.k8s.io/v1"):
        plain = f"apiVersion: {builtin}\nkind: X\nmetadata: {{name: x}}\n"
        assert CliRunner().invoke(main, ["render", "-f", "-"], input=plain).stderr == ""


def test_render_prints_a_stack_in_full_but_never_its_credentials() -> None:
    result = CliRunner().invoke(main, ["render", "-f", str(ROOT / "examples/dataservice.yaml")])
    assert result.exit_code == 0, result.output
    kinds = [d["kind"] for d in yaml.safe_load_all(result.output)]
    assert kinds.count("Deployment") == 10  # the seed's pods: uuc is third-party
    assert kinds.count("StatefulSet") == 1
    assert "Secret" not in kinds


def test_manifests_check_passes_on_the_committed_files(tmp_path: Path) -> None:
    assert (
        CliRunner()
        .invoke(main, ["manifests", "--check", "--output-dir", str(ROOT / "deploy")])
        .exit_code
        == 0
    )
    stale = CliRunner().invoke(main, ["manifests", "--check", "--output-dir", str(tmp_path)])
    assert stale.exit_code == 1
    written = CliRunner().invoke(main, ["manifests", "--output-dir", str(tmp_path)])
    assert "install.yaml" in written.output


def test_manifests_prints_a_namespaced_install_bundle_to_stdout() -> None:
    args = ["manifests", "--image", "reg/op:2", "-n", "ops", "--watch-namespace", "a", "-o", "-"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    assert ("Role", "a") in [(d["kind"], d["metadata"].get("namespace")) for d in docs]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "reg/op:2"
    assert "--namespace=a" in container["args"]


def test_manifests_takes_an_image_by_digest() -> None:
    image = "registry.example.com:5000/team/appstack@sha256:" + "0f" * 32
    result = CliRunner().invoke(main, ["manifests", "--image", image, "-o", "-"])
    assert result.exit_code == 0, result.output
    (deployment,) = [d for d in yaml.safe_load_all(result.output) if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == image


def test_render_prints_json_too() -> None:
    args = ["render", "-f", str(ROOT / "examples/appservice.yaml"), "-o", "json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    assert [o["kind"] for o in listed["items"]] == ["Deployment", "Service"]


def test_log_level_is_a_choice() -> None:
    result = CliRunner().invoke(main, ["run", "--log-level", "loud"])
    assert result.exit_code == 2
    assert "'loud' is not one of" in result.output


def test_the_cluster_commands_come_from_the_test_bed_distribution() -> None:
    """`appstack cluster` is the test bed's (entry-point group appstack.cli), not the product's:
    the product's wheel has no such command (tests/e2e/test_packaging.py)."""
    from importlib.metadata import entry_points  # noqa: PLC0415

    (entry,) = [e for e in entry_points(group="appstack.cli") if e.name == "cluster"]
    assert entry.value == "appstack_testbed.cli:cluster"
    assert entry.dist is not None
    assert entry.dist.name == "appstack-testbed"
    cluster = main.get_command(click.Context(main), "cluster")
    assert cluster is not None
    assert cluster.callback is not None
    assert cluster.callback.__module__ == "appstack_testbed.cli"


def test_an_uninstall_wait_says_how_many_of_each_kind_remain_and_names_the_first() -> None:
    from appstack.cli.uninstall import CRD, Found, waiting_line  # noqa: PLC0415
    from appstack.controllers.appservice import APP_SERVICE  # noqa: PLC0415

    left = [Found(APP_SERVICE, f"app-{i}", "shop", ()) for i in range(5)]
    left.append(Found(CRD, "appservices.appstack.dev", None, ()))
    assert waiting_line(left, 12.4, 300) == (
        "waiting for 5 AppService, 1 CustomResourceDefinition to go (12s of 300s): "
        "shop/app-0, shop/app-1, shop/app-2 and 3 more"
    )


def test_a_kubeconfig_list_is_merged_not_taken_for_one_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``KUBECONFIG=a:b`` (kubectl's list) reaches the loader, which merges the files: the
    command gets as far as the merged config's server, never "kubeconfig a:b does not
    exist"."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "here",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "here", "context": {"cluster": "c", "user": "u"}}],
    }
    second = tmp_path / "second.yaml"
    second.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing.yaml'}:{second}")
    result = CliRunner().invoke(main, ["status", "shop"])
    assert result.exit_code != 0
    assert "does not exist" not in result.output, result.output
    assert "127.0.0.1:9" in result.output, result.output
    assert "Traceback" not in result.output


def test_context_chooses_the_kubeconfigs_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--context`` as kubectl's: the named context's server, not the current one's."""

    def entry(name: str, port: int) -> dict[str, object]:
        return {
            "clusters": [{"name": name, "cluster": {"server": f"https://127.0.0.1:{port}"}}],
            "users": [{"name": name, "user": {"token": "t"}}],
            "contexts": [
                {"name": name, "context": {"cluster": name, "user": name, "namespace": name}}
            ],
        }

    first, second = entry("here", 9), entry("there", 10)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "here",
        **{key: first[key] + second[key] for key in ("clusters", "users", "contexts")},  # type: ignore[operator]
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KUBECONFIG", str(path))
    current = CliRunner().invoke(main, ["status", "shop"])
    assert "127.0.0.1:9" in current.output, current.output
    chosen = CliRunner().invoke(main, ["status", "shop", "--context", "there"])
    assert chosen.exit_code != 0
    assert "127.0.0.1:10" in chosen.output, chosen.output
    unknown = CliRunner().invoke(main, ["status", "shop", "--context", "nowhere"])
    assert "no context 'nowhere'" in unknown.output, unknown.output


def test_render_reads_every_f_and_directories_as_kubectl(tmp_path: Path) -> None:
    """Issue #51: `render -f a -f b` rendered only b; directories were refused."""
    seed = (ROOT / "examples/appservice.yaml").read_text()

    def named(name: str) -> str:
        return seed.replace("name: appservice-sample", f"name: {name}")

    (tmp_path / "a.yaml").write_text(named("first"))
    deeper = tmp_path / "more" / "deeper"
    deeper.mkdir(parents=True)
    (tmp_path / "more" / "b.yml").write_text(named("second"))
    (deeper / "c.yaml").write_text(named("third"))
    (tmp_path / "more" / "notes.txt").write_text("not a manifest")

    def names(*args: str) -> list[str]:
        result = CliRunner().invoke(main, ["render", *args, "-o", "json"])
        assert result.exit_code == 0, result.output
        items = json.loads(result.stdout)["items"]
        return sorted({i["metadata"]["name"] for i in items if i["kind"] == "Deployment"})

    assert names("-f", str(tmp_path / "a.yaml"), "-f", str(tmp_path / "more")) == [
        "first",
        "second",
    ]
    assert names("-f", str(tmp_path), "-R") == ["first", "second", "third"]
    missing = CliRunner().invoke(main, ["render", "-f", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2
    assert "does not exist" in missing.output


def test_completion_scripts_complete_commands_and_flags() -> None:
    """`appstack completion bash` (click's completion, with the program's own variable):
    sourced in a real bash, it completes a command and a flag."""
    import shutil  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    for shell in ("bash", "zsh", "fish"):
        result = CliRunner().invoke(main, ["completion", shell])
        assert result.exit_code == 0, result.output
        assert "_APPSTACK_COMPLETE" in result.output
    bash = shutil.which("bash")
    if bash is None:  # pragma: no cover
        pytest.skip("no bash")
    script = CliRunner().invoke(main, ["completion", "bash"]).output
    binary = Path(sys.executable).parent
    probe = (
        f"{script}\n"
        "COMPREPLY=(); COMP_WORDS=(appstack ren); COMP_CWORD=1; _appstack_completion appstack; "
        'echo "${COMPREPLY[@]}"; '
        "COMPREPLY=(); COMP_WORDS=(appstack render --recur); COMP_CWORD=2; "
        "_appstack_completion appstack; "
        'echo "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        [bash, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PATH": f"{binary}:/usr/bin:/bin"},
    )
    assert done.stdout.split("\n")[:2] == ["render", "--recursive"], done.stdout


def test_the_top_level_help_groups_commands_and_cuts_no_summary() -> None:
    """Issue #51: 7 of 12 summaries were cut mid-phrase ("..."), in one flat list."""
    text = CliRunner().invoke(main, ["--help"], terminal_width=100).output
    for section in ("Operate appstack:", "Build an operator:", "Shell:"):
        assert section in text, text
    commands = text[text.index("Operate appstack:") :]
    assert "..." not in commands, commands
    assert text.index("Operate appstack:") < text.index("  run ") < text.index("Build")


def test_manifests_o_is_a_format_and_directories_are_output_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #51: `appstack manifests -o yaml` wrote a directory named yaml/."""
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    printed = runner.invoke(main, ["manifests", "-o", "yaml"])
    assert printed.exit_code == 0, printed.output
    kinds = [d["kind"] for d in yaml.safe_load_all(printed.stdout) if d]
    assert "Deployment" in kinds
    listed = json.loads(runner.invoke(main, ["manifests", "-o", "json"]).stdout)
    assert listed["kind"] == "List"
    assert sorted(i["kind"] for i in listed["items"]) == sorted(kinds)
    refused = runner.invoke(main, ["manifests", "-o", "deploy"])
    assert refused.exit_code == 2
    assert "--output-dir deploy" in refused.output
    assert not Path("yaml").exists()
    assert not Path("deploy").exists()


async def test_the_commands_print_the_api_servers_warnings_on_stderr_as_kubectl(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`uninstall` and `status` connect through ``_connect``: each distinct warning the API
    server sends is one ``Warning: <text>`` line on stderr, nothing on stdout."""
    from appstack.cli import install  # noqa: PLC0415
    from appstack.runtime import CONFIG_MAP, Client  # noqa: PLC0415
    from tests.support.scripted_transport import scripted_client  # noqa: PLC0415

    scripted, transport = scripted_client()

    async def connect(*_args: object, **_kwargs: object) -> Client:
        return scripted

    monkeypatch.setattr(Client, "connect", connect)
    client = await install._connect(None, None)
    for _ in range(2):
        transport.answer(200, {}, warnings=('299 - "example.com/v1alpha1 Widget is deprecated"',))
        await client.get(CONFIG_MAP, "x", "ns")
    out, err = capsys.readouterr()
    assert (out, err) == ("", "Warning: example.com/v1alpha1 Widget is deprecated\n")

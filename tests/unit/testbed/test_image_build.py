"""Pure parts of the daemonless image build: cache keys, mmdebstrap and buildah arguments,
and the mount-namespace + chroot command (run for real by tests/e2e/test_image.py)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from appstack.scaffold.project import Project, write
from appstack_testbed import image
from appstack_testbed.oci import keep_newest
from appstack_testbed.rootfs import Bind, DebianRootfs, ImageBuildError, namespace_command


def test_rootfs_key_depends_on_the_package_set_only_not_its_order() -> None:
    a = DebianRootfs("bookworm", ("python3", "python3-venv"))
    assert a.key == DebianRootfs("bookworm", ("python3-venv", "python3")).key
    assert a.key != DebianRootfs("bookworm", ("python3",)).key
    assert a.key != DebianRootfs("trixie", ("python3", "python3-venv")).key
    assert a.tarball(Path("/c")) == Path(f"/c/rootfs-bookworm-{a.key}.tar")


def test_mmdebstrap_builds_a_slim_minbase_with_updates_and_security() -> None:
    command = image.RUNTIME_ROOTFS.command(Path("/out.tar"))
    assert command[:3] == ["mmdebstrap", "--variant=minbase", "--include=python3"]
    assert "--dpkgopt=path-exclude=/usr/share/doc/*" in command
    assert command[-4:] == [
        "/out.tar",
        "deb http://deb.debian.org/debian bookworm main",
        "deb http://deb.debian.org/debian bookworm-updates main",
        "deb http://deb.debian.org/debian-security bookworm-security main",
    ]


def test_namespace_command_mounts_then_makes_root_read_only_then_execs_as_the_user() -> None:
    command = namespace_command(
        Path("/images/my root"),
        ["appstack", "run", "--namespace=a b"],
        userspec="65532:65532",
        tmpfs=["/run"],
        binds=[Bind(Path("/secrets/sa dir"), "/run/secrets/sa")],
        read_only_root=True,
    )
    assert command[:6] == ["unshare", "--mount", "--propagation", "private", "--", "sh"]
    lines = command[-1].splitlines()
    assert lines[0] == "set -e"
    assert "mount -t proc proc '/images/my root/proc'" in lines
    assert lines.index("mount -o remount,bind,ro '/images/my root'") == len(lines) - 2
    assert lines[-1] == "exec " + shlex.join(
        [
            "chroot",
            "--userspec=65532:65532",
            "/images/my root",
            "appstack",
            "run",
            "--namespace=a b",
        ]
    )
    tmpfs = next(i for i, line in enumerate(lines) if "tmpfs" in line)
    bind = lines.index("mount --bind '/secrets/sa dir' '/images/my root/run/secrets/sa'")
    assert tmpfs < bind < lines.index("mount -o remount,bind,ro '/images/my root/run/secrets/sa'")


def test_a_build_command_stays_writable_and_root() -> None:
    script = namespace_command(Path("/r"), ["sh", "-c", "true"])[-1]
    assert "remount,bind,ro" not in script
    assert "--userspec" not in script


def _project(root: Path) -> Path:
    for name in ("pyproject.toml", "README.md", "LICENSE", "requirements.lock"):
        (root / name).write_text(name)
    (root / "src" / "appstack" / "__pycache__").mkdir(parents=True)
    (root / "src" / "appstack" / "__init__.py").write_text("x = 1\n")
    return root


def test_image_key_follows_the_sources_but_not_caches(tmp_path: Path) -> None:
    project = _project(tmp_path)
    key = image.image_key(project)
    (project / "src" / "appstack" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (project / "src" / "appstack.egg-info").mkdir()
    (project / "src" / "appstack.egg-info" / "PKG-INFO").write_text("x")
    assert image.image_key(project) == key
    (project / "src" / "appstack" / "__init__.py").write_text("x = 2\n")
    assert image.image_key(project) != key


def test_buildah_configuration_is_the_image_configuration() -> None:
    args = image.CONFIG.buildah_args()
    assert '--entrypoint=["appstack"]' in args
    assert '--cmd=["run", "--leader-elect"]' in args
    assert "--user=65532:65532" in args
    assert [a for a in args if a.startswith("--port")] == ["--port=8080/tcp", "--port=8081/tcp"]


def test_pruning_keeps_the_most_recently_used(tmp_path: Path) -> None:
    paths = []
    for age in (30, 10, 20, 40):
        path = tmp_path / f"a{age}"
        path.write_text("")
        os.utime(path, (1_000_000 - age, 1_000_000 - age))
        paths.append(path)
    assert keep_newest(paths, 2) == [tmp_path / "a30", tmp_path / "a40"]


def test_a_projects_image_needs_its_wheel_in_dist_and_says_how_to_get_it(tmp_path: Path) -> None:
    """``make image-oci`` of a scaffolded project builds its Dockerfile, which installs from
    dist/ alone: without the project's wheel there it is refused, naming ``make build``,
    before anything is built (another project's wheel does not count)."""
    write(tmp_path, Project(domain="example.com", repo="example.com/g", project_name="my-book"))
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "appstack-0.1.0-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "dist" / "my_bookmarks-0.1.0-py3-none-any.whl").write_bytes(b"")
    with pytest.raises(ImageBuildError, match=r"no wheel of my_book: .*run `make build` first"):
        image.build_project_image(tmp_path, ref="my-book:dev")

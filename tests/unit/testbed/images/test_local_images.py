"""The test bed's local images: the names real nodes pull them by (pure)."""

from __future__ import annotations

from appstack.controllers.appstack.catalog import CATALOG, image
from appstack_testbed.images.build import repository_path
from appstack_testbed.images.catalog import APP, NGINX, PAUSE, POSTGRES, REDIS, standard


def test_a_reference_maps_to_the_path_containerd_asks_the_mirror_for() -> None:
    assert repository_path("nginx:1.7.9") == ("library/nginx", "1.7.9")
    assert repository_path("busybox") == ("library/busybox", "latest")
    assert repository_path("docker.io/library/nginx:1.27") == ("library/nginx", "1.27")
    assert repository_path("registry.example.com/appstack:0.1.0") == ("appstack", "0.1.0")
    assert repository_path("registry.example.com/dataservice/auth:1.0") == (
        "dataservice/auth",
        "1.0",
    )
    assert repository_path("localhost:5000/team/app:2") == ("team/app", "2")
    assert repository_path("registry.k8s.io/pause:3.10") == ("pause", "3.10")


def test_the_images_the_examples_and_the_seeds_name_are_served() -> None:
    served = {ref for image in standard() for ref in image.refs}
    for ref in (
        "nginx:1.7.9",  # the seed's AppService sample
        "nginx:1.27",  # the DataService web tier
        "busybox:latest",  # the seed's CronTab
        "mysql:8.4",  # the DataService middleware, appstack's default mysql
        "postgres:16",  # appstack's default postgres
        "redis:7.4",  # appstack's default redis
        "registry.example.com/dataservice/eureka:1.0",
        "registry.example.com/shop/api:1.0",
        "registry.k8s.io/pause:3.10",  # the pod sandbox (containerd's sandbox_image)
    ):
        assert ":".join(repository_path(ref)) in served, ref
    assert PAUSE in standard()
    assert NGINX.key != APP.key


def test_every_managed_engine_but_mongodb_has_its_default_image_served() -> None:
    """What a managed middleware without ``version`` or ``image`` pulls is in the registry
    (MongoDB has no Debian package: docs/local-cluster.md)."""
    served = {ref for local in standard() for ref in local.refs}
    for engine in sorted(set(CATALOG) - {"mongodb"}):
        assert ":".join(repository_path(image(engine, None, None))) in served, engine


def test_only_an_image_that_sets_a_stop_signal_has_it_in_its_key() -> None:
    # postgres stops with SIGINT (a fast shutdown, as the original); the others keep the
    # keys they had, so that their cached builds stay valid
    assert POSTGRES.config.stop_signal == "SIGINT"
    assert "--stop-signal=SIGINT" in POSTGRES.config.buildah_args()
    assert REDIS.config.stop_signal is None
    assert not any(arg.startswith("--stop-signal") for arg in REDIS.config.buildah_args())
    assert "SIGINT" not in repr(POSTGRES.config)

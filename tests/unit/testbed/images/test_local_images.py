"""The test bed's local images: the names real nodes pull them by (pure)."""

from __future__ import annotations

from appstack_testbed.images.build import repository_path
from appstack_testbed.images.catalog import APP, NGINX, PAUSE, standard


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
        "mysql:8.4",  # the DataService middleware
        "registry.example.com/dataservice/eureka:1.0",
        "registry.example.com/shop/api:1.0",
        "registry.k8s.io/pause:3.10",  # the pod sandbox (containerd's sandbox_image)
    ):
        assert ":".join(repository_path(ref)) in served, ref
    assert PAUSE in standard()
    assert NGINX.key != APP.key

"""tests/unit mirrors the code it tests, so a module's tests are found without a search:
each folder under tests/unit is a package of the code (see tests/README.md) and holds the
``__init__.py`` that keeps its test modules' names apart; in the runtime, the controller kit
and the api, each test file is named after the module it tests, and each module has one (or
this file says which test files exercise it)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO_ROOT

UNIT = REPO_ROOT / "tests" / "unit"

# The first folder under tests/unit names the tree it mirrors; any other is src/appstack's.
MIRRORED = {
    "testbed": REPO_ROOT / "testbed" / "src" / "appstack_testbed",
    "bench": REPO_ROOT / "bench",
    "support": REPO_ROOT / "tests" / "support",
}


def _folders() -> list[Path]:
    return sorted(
        path.relative_to(UNIT)
        for path in UNIT.rglob("*")
        if path.is_dir() and path.name != "__pycache__"
    )


def mirrored(folder: Path) -> Path:
    """The code folder that tests/unit/``folder`` holds the tests of."""
    first, *rest = folder.parts
    if first in MIRRORED:
        return MIRRORED[first].joinpath(*rest)
    return REPO_ROOT / "src" / "appstack" / folder


def test_every_folder_under_tests_unit_is_a_folder_of_the_code() -> None:
    folders = _folders()
    assert Path("runtime") in folders  # the walk found the tree
    missing = [
        f"tests/unit/{f} (no {mirrored(f).relative_to(REPO_ROOT)})"
        for f in folders
        if not mirrored(f).is_dir()
    ]
    assert not missing, f"test folders that mirror no code folder: {missing}"


def test_every_test_folder_is_a_package() -> None:
    # Without __init__.py two test modules of the same name in different folders collide.
    bare = [str(f) for f in _folders() if not (UNIT / f / "__init__.py").is_file()]
    assert not bare, f"folders under tests/unit without __init__.py: {bare}"


#: The packages whose test files are named after their modules (issue #40): in
#: tests/unit/<package>/, ``test_<module>.py`` (or ``test_<module>_<aspect>.py``) for each
#: module of src/appstack/<package>/, ``test_<package name>[_<aspect>].py`` for the package
#: as a whole (its ``__init__.py``, or what all its modules share).
NAMED_AFTER_MODULES = ("runtime", "sdk/kit", "api")

#: Modules without a unit test file of their own, and the test files that exercise them
#: (each must exist): what only a real API server can exercise, and modules tested through
#: the code that uses them. A module that gets its own test file leaves this table.
TESTED_ELSEWHERE: dict[str, dict[str, tuple[str, ...]]] = {
    "runtime": {
        # runs the cache, controllers, leader election and HTTP endpoints together
        "manager": ("tests/e2e/test_manager.py", "tests/unit/sdk/test_operator_start.py"),
        # aiohttp I/O to a real API server; its kubeconfig loading in test_kubeconfig
        "transport": (
            "tests/unit/runtime/test_kubeconfig.py",
            "tests/e2e/test_client.py",
            "tests/e2e/test_connections.py",
        ),
    },
    "sdk/kit": {
        # class attributes only: read through both reconcilers' tests
        "declared": ("tests/unit/sdk/kit/test_objects.py", "tests/unit/sdk/kit/test_caching.py"),
        # declarations only; what an operator makes of them (gauges, status, dashboards)
        "observers": (
            "tests/unit/controllers/test_kind_metrics.py",
            "tests/unit/cli/test_status_kinds.py",
            "tests/unit/manifests/test_dashboards.py",
        ),
        # every kind's reconcile: read, validate (Ready=False), finalizer, apply
        "reconciler": (
            "tests/unit/controllers/test_registration.py",
            "tests/e2e/test_appservice.py",
            "tests/e2e/test_crontab.py",
        ),
    },
    "api": {
        # the kinds' models and rules, through the controllers that read them and the CEL
        # parity table (every rule of the CRDs, refused by the models too)
        "appstack_component": (
            "tests/unit/api/test_appstack_rules.py",
            "tests/unit/controllers/appstack/test_component_workload_fields.py",
            "tests/unit/api/test_api_cel_parity.py",
        ),
        "appstack_middleware": (
            "tests/unit/controllers/appstack/test_middleware_config.py",
            "tests/unit/controllers/appstack/test_managed_engines.py",
            "tests/unit/controllers/appstack/test_third_party_and_configs.py",
            "tests/unit/api/test_api_cel_parity.py",
        ),
        "cron": ("tests/unit/controllers/crontab/test_crontab.py",),
        # appstack run's own flags: parsed by the command, values of the chart
        "flags": (
            "tests/unit/cli/test_conventions.py",
            "tests/unit/manifests/test_one_generator.py",
        ),
        "cron_rules": ("tests/unit/api/test_api_cel_parity.py", "tests/e2e/test_cel_parity.py"),
        "etcdcluster": (
            "tests/unit/controllers/etcdcluster/test_etcd_desired.py",
            "tests/unit/api/test_api_cel_parity.py",
        ),
        "etcdcluster_backup": (
            "tests/unit/controllers/etcdcluster/test_etcd_backup.py",
            "tests/unit/controllers/etcdcluster/test_etcd_backup_schedule.py",
        ),
        "etcdcluster_maintenance": ("tests/unit/controllers/etcdcluster/test_etcd_maintenance.py",),
        "etcdcluster_recovery": ("tests/unit/controllers/etcdcluster/test_etcd_recovery.py",),
        "graph": ("tests/unit/controllers/appstack/test_appstack_pieces.py",),
        "identity": ("tests/unit/sdk/test_identity.py", "tests/unit/test_operator_identity.py"),
        "managed_rules": (
            "tests/unit/controllers/appstack/test_mongodb_desired.py",
            "tests/unit/api/test_api_cel_parity.py",
        ),
        "mongodbcommunity": ("tests/unit/controllers/mongodbcommunity/test_mongodbcommunity.py",),
        "security": (
            "tests/unit/controllers/appstack/test_appstack_pieces.py",
            "tests/unit/controllers/appservice/test_appservice_desired.py",
        ),
        "urls": (
            "tests/unit/controllers/appstack/test_third_party_and_configs.py",
            "tests/unit/api/test_api_cel_parity.py",
        ),
    },
}

#: Test files in those folders that belong elsewhere and wait to be moved (each fails the
#: test once it is gone: then delete it here).
PENDING_MOVES: dict[str, str] = {}


def _modules(package: str) -> tuple[set[str], set[str]]:
    """The names test files of ``package`` may be named after (its modules and its own
    name), and those that need tests: every module, and the package itself when its
    ``__init__.py`` holds more than a docstring."""
    source = REPO_ROOT / "src" / "appstack" / package
    modules = {p.stem for p in source.glob("*.py")} - {"__init__"}
    name = Path(package).name
    body = ast.parse((source / "__init__.py").read_text()).body
    code = [node for node in body if not (isinstance(node, ast.Expr) and node is body[0])]
    return modules | {name}, modules | ({name} if code else set())


def _module_of(test_file: str, names: set[str]) -> str | None:
    """The module ``test_file`` is named after: the longest of ``names`` it is
    ``test_<name>.py`` or ``test_<name>_<aspect>.py`` of (``test_cron_times.py`` is
    cron_times', not cron's)."""
    stem = test_file.removeprefix("test_").removesuffix(".py")
    fits = [n for n in names if stem == n or stem.startswith(f"{n}_")]
    return max(fits, key=len, default=None)


def test_every_module_has_its_test_file_or_says_where_it_is_tested() -> None:
    untested, stale, missing = [], [], []
    for package in NAMED_AFTER_MODULES:
        names, needed = _modules(package)
        files = [p.name for p in (UNIT / package).glob("test_*.py")]
        tested = {_module_of(f, names) for f in files}
        elsewhere = TESTED_ELSEWHERE.get(package, {})
        for module in sorted(needed - tested - set(elsewhere)):
            untested.append(f"src/appstack/{package}/{module}.py")
        for module, where in sorted(elsewhere.items()):
            if module in tested or module not in needed:
                stale.append(f"{package}/{module}")
            missing += [path for path in where if not (REPO_ROOT / path).is_file()]
    assert "watcher" in _modules("runtime")[1]  # the walk found the modules
    assert not untested, (
        "write tests/unit/<package>/test_<module>.py, or name in TESTED_ELSEWHERE the test "
        f"files that exercise it: {untested}"
    )
    assert not stale, (
        f"has its own test file now, or is gone: remove from TESTED_ELSEWHERE: {stale}"
    )
    assert not missing, f"TESTED_ELSEWHERE names test files that do not exist: {missing}"


def test_every_test_file_is_named_after_a_module_of_its_package() -> None:
    misnamed, seen = [], set()
    for package in NAMED_AFTER_MODULES:
        names, _ = _modules(package)
        for path in sorted((UNIT / package).glob("test_*.py")):
            where = f"{package}/{path.name}"
            if where in PENDING_MOVES:
                seen.add(where)
            elif _module_of(path.name, names) is None:
                misnamed.append(f"tests/unit/{where}")
    assert not misnamed, (
        "name it test_<module>.py or test_<module>_<aspect>.py after the module it tests "
        f"(or test_<package>_<aspect>.py for the package as a whole): {misnamed}"
    )
    assert seen == set(PENDING_MOVES), (
        f"moved: remove from PENDING_MOVES: {set(PENDING_MOVES) - seen}"
    )


def test_a_test_file_is_the_longest_module_name_it_fits() -> None:
    names = {"cron", "cron_times", "cache", "api"}
    assert _module_of("test_cron_times.py", names) == "cron_times"
    assert _module_of("test_cron.py", names) == "cron"
    assert _module_of("test_cache_transform.py", names) == "cache"
    assert _module_of("test_api_cel_parity.py", names) == "api"
    assert _module_of("test_crontab.py", names) is None  # a prefix is not a module
    assert _module_of("test_store_and_errors.py", names) is None


def test_the_mirror_maps_folders_as_documented() -> None:
    assert mirrored(Path("controllers/etcdcluster")) == (
        REPO_ROOT / "src" / "appstack" / "controllers" / "etcdcluster"
    )
    assert mirrored(Path("testbed/images")) == (
        REPO_ROOT / "testbed" / "src" / "appstack_testbed" / "images"
    )

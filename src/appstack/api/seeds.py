"""The API groups of the seed operators, and what each of their kinds is served as here.

The seeds (operator-sdk, controller-runtime and kubebuilder tutorials) each serve their
kinds in their own group: ``app.example.com`` and ``kosmos.io`` (AppService),
``stable.example.com`` (CronTab), ``mongodbcommunity.mongodb.com`` (MongoDBCommunity),
``d3os-product.com.d3os`` (DataService). A document in
one of those groups, or one of our kinds in another group, would otherwise be passed
through by ``appstack render`` as an ordinary object; :func:`foreign_problem` says what to
change instead. Pure; used by :mod:`appstack.cli.render`.
"""

from __future__ import annotations

from typing import Any

from appstack.api.kind import GROUP
from appstack.sdk import DEFAULT_VERSION as VERSION

SERVED = f"{GROUP}/{VERSION}"

# seed API group -> {seed kind: (our kind, what else to change, if anything)}
SEED_GROUPS: dict[str, dict[str, tuple[str, str]]] = {
    "app.example.com": {"AppService": ("AppService", "")},
    "kosmos.io": {"AppService": ("AppService", "")},
    "stable.example.com": {"CronTab": ("CronTab", "")},
    # the MongoDB community operator's group (seed 004; mongodb.com in its 0.5.0 release)
    "mongodbcommunity.mongodb.com": {"MongoDBCommunity": ("MongoDBCommunity", "")},
    "mongodb.com": {"MongoDBCommunity": ("MongoDBCommunity", "")},
    "d3os-product.com.d3os": {
        "DataService": (
            "AppStack",
            "the DataService system is one AppStack with its services as components and "
            "mysql as middleware: see examples/dataservice.yaml",
        ),
    },
}


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def foreign_problem(doc: dict[str, Any], ours: set[str]) -> str | None:
    """What to change in ``doc`` if it is a seed operator's object or one of ``ours`` (our
    kinds) in another API group; None for our own objects and ordinary ones."""
    api_version, kind = str(doc.get("apiVersion", "")), str(doc.get("kind", ""))
    group = _group(api_version)
    if group == GROUP:
        return None
    seed = SEED_GROUPS.get(group)
    if kind in ours:
        return f"{kind} is served as {SERVED}; change apiVersion (was {api_version})"
    if seed is None:
        return None
    if kind not in seed:
        kinds = ", ".join(
            mine if mine == theirs else f"{theirs} (as {mine})"
            for theirs, (mine, _) in seed.items()
        )
        return (
            f"{api_version} is a seed operator's API group; appstack serves {kinds} as "
            f"{SERVED}, not {kind}"
        )
    target, how = seed[kind]
    return f"{kind} ({api_version}, a seed operator's) is served as {target} in {SERVED}; " + (
        how or "change apiVersion"
    )


def third_party(doc: dict[str, Any]) -> str | None:
    """A note for an object of neither Kubernetes' own API groups (``v1``, ``apps``, ...,
    ``*.k8s.io``) nor ours (e.g. cert-manager's Certificate): passed on as it is, but said
    (its own operator must serve it). None for built-in and our own objects."""
    api_version, kind = str(doc.get("apiVersion", "")), str(doc.get("kind", ""))
    group = _group(api_version)
    if group == GROUP or "." not in group or group.endswith(".k8s.io"):
        return None
    return (
        f"{kind} ({api_version}) is not a kind appstack serves: passed on as it is, for "
        "the operator that serves it"
    )

"""The AppStack rows of the CEL parity table for external middleware and components (pure
data), changes of :data:`tests.cel_parity.appstack_cases.STACK`."""

from __future__ import annotations

from tests.cel_parity.table import DELETE, Case

_K = "AppStack"
_EXT = ".spec.middleware[*].external"
_URL = ".spec.middleware[*].external.url"
_C = ".spec.components[*]"
_CFG = ".spec.components[*].configs[*]"
_UUC = "spec.middleware[2]"
_CACHE = "spec.middleware[3]"
_API = "spec.components[0]"
_SECRET = {"secretKeyRef": {"name": "s", "key": "k"}}

MEMBER_CASES: tuple[Case, ...] = (
    # external middleware
    Case(
        _K,
        _EXT,
        "set exactly one of host",
        ((f"{_CACHE}.external.url", "https://r.example"),),
        f"{_CACHE}.external",
    ),
    Case(_K, _EXT, "host needs port", ((f"{_CACHE}.external.port", DELETE),), f"{_CACHE}.external"),
    Case(
        _K,
        _EXT,
        "authMethod goes with url",
        ((f"{_CACHE}.external.authMethod", "none"),),
        f"{_CACHE}.external.authMethod",
    ),
    Case(
        _K,
        _EXT,
        "authMethod basic, bearer",
        ((f"{_UUC}.external.secretRef", DELETE),),
        f"{_UUC}.external.secretRef",
    ),
    Case(
        _K,
        _EXT,
        "authMethod basic, bearer",
        ((f"{_UUC}.external.secretRef", DELETE), (f"{_UUC}.external.authMethod", "none")),
        f"{_UUC}.external.secretRef",
        refused=False,
    ),
    Case(
        _K,
        _URL,
        "url must be absolute",
        ((f"{_UUC}.external.url", "uuc.example.com/uuc"),),
        f"{_UUC}.external.url",
    ),
    Case(
        _K,
        _URL,
        "credentials are never inline in url",
        ((f"{_UUC}.external.url", "https://u:p@uuc.example.com"),),
        f"{_UUC}.external.url",
    ),
    Case(
        _K,
        _URL,
        "url: the port must be",
        ((f"{_UUC}.external.url", "https://u.example:65536"),),
        f"{_UUC}.external.url",
    ),
    Case(
        _K,
        _URL,
        "url: the port must be",
        ((f"{_UUC}.external.url", "https://u.example:0/"),),
        f"{_UUC}.external.url",
    ),
    Case(
        _K,
        _URL,
        "url: the port must be",
        ((f"{_UUC}.external.url", "https://u.example:65535"),),
        f"{_UUC}.external.url",
        refused=False,
    ),
    Case(
        _K,
        f"{_EXT}.password",
        "credentials are never inline: use",
        ((f"{_CACHE}.external.password", "x"),),
        f"{_CACHE}.external.password",
    ),
    # one component
    Case(
        _K,
        _C,
        "a variable may be set in env or in envs",
        ((f"{_API}.envs[1].name", "MODE"),),
        f"{_API}.envs",
    ),
    Case(
        _K,
        _C,
        "set config (one ConfigMap)",
        ((f"{_API}.config", {"mountPath": "/c", "files": {"a": "b"}}),),
        f"{_API}.configs",
    ),
    Case(  # configs: [] is set (the models once took it for unset)
        _K,
        _C,
        "set config (one ConfigMap)",
        ((f"{_API}.config", {"mountPath": "/c", "files": {"a": "b"}}), (f"{_API}.configs", [])),
        f"{_API}.configs",
    ),
    Case(
        _K,
        _C,
        "configs: names and mount paths",
        ((f"{_API}.configs[1].mountPath", "/app/config"),),
        f"{_API}.configs",
    ),
    Case(
        _K,
        _C,
        "configs: names and mount paths",
        ((f"{_API}.configs[1].name", "api"),),
        f"{_API}.configs",
    ),
    Case(
        _K,
        _C,
        "configs: a ConfigMap with files",
        ((f"{_API}.configs[0].name", "other"),),
        f"{_API}.configs",
    ),
    Case(
        _K,
        _C,
        "configs: a ConfigMap with files",
        ((f"{_API}.configs[0].name", "api-x"),),
        f"{_API}.configs",
        refused=False,
    ),
    Case(
        _K, _C, "port numbers must be unique", ((f"{_API}.ports[1].port", 8080),), f"{_API}.ports"
    ),
    Case(
        _K, _C, "port names must be unique", ((f"{_API}.ports[1].name", "http"),), f"{_API}.ports"
    ),
    Case(_K, _C, "port names p<number>", ((f"{_API}.ports[1].name", "p9090"),), f"{_API}.ports"),
    Case(
        _K,
        _C,
        "port names p<number>",
        ((f"{_API}.ports[1].name", "p9090a"),),
        f"{_API}.ports",
        refused=False,
    ),
    Case(
        _K,
        f"{_C}.envs[*]",
        "set either value or valueFrom",
        ((f"{_API}.envs[1].valueFrom", _SECRET),),
        f"{_API}.envs[1]",
    ),
    Case(
        _K,
        f"{_C}.envs[*].valueFrom",
        "valueFrom needs exactly one",
        ((f"{_API}.envs[0].valueFrom.configMapKeyRef", {"name": "c", "key": "k"}),),
        f"{_API}.envs[0].valueFrom",
    ),
    Case(
        _K,
        f"{_C}.envs[*].valueFrom",
        "valueFrom needs exactly one",
        ((f"{_API}.envs[0].valueFrom", {}),),
        f"{_API}.envs[0].valueFrom",
    ),
    Case(
        _K,
        _CFG,
        "set exactly one of files",
        ((f"{_API}.configs[0].configMap", "x"),),
        f"{_API}.configs[0]",
    ),
    Case(
        _K,
        _CFG,
        "subPath must be one of",
        ((f"{_API}.configs[0].subPath", "b.yml"),),
        f"{_API}.configs[0].subPath",
    ),
    Case(
        _K,
        _CFG,
        "subPath must name a file",
        ((f"{_API}.configs[1].subPath", ".."),),
        f"{_API}.configs[1].subPath",
    ),
    Case(
        _K,
        f"{_C}.readinessProbe",
        "a probe needs exactly one",
        ((f"{_API}.readinessProbe.tcpSocket", {"port": 8080}),),
        f"{_API}.readinessProbe",
    ),
    Case(
        _K,
        f"{_C}.livenessProbe",
        "a probe needs exactly one",
        ((f"{_API}.livenessProbe", {"periodSeconds": 5}),),
        f"{_API}.livenessProbe",
    ),
)


def _url(url: str, message: str, *, refused: bool = True) -> Case:
    field = f"{_UUC}.external.url"
    return Case(_K, _URL, message, ((field, url),), field, refused=refused)


# URLs the two sides once disagreed on: RE2's $ ends the text (Python's also matches before
# a final newline), a port that is not a number or is empty, IPv6 literals, leading zeros,
# a bad escape after a port (the API server's url() refused it).
URL_EDGES: tuple[Case, ...] = (
    _url("https://uuc.example.com\n", "url must be absolute"),
    _url("https://uuc.example.com:abc/uuc", "url: the port must be"),
    _url("https://uuc.example.com:/uuc", "url: the port must be"),
    _url("https://[::1]:8443/x", "url: the port must be", refused=False),
    _url("https://[::1]/x", "url: the port must be", refused=False),
    _url("https://uuc.example.com:08443/x", "url: the port must be", refused=False),
    _url("https://uuc.example.com:8443/a%zz", "url: the port must be", refused=False),
)

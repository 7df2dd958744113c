"""The pure parts of bench/kep5866.py: the 64-bit FNV-1a it checks the API server's
``shardRange`` against, the equal ranges and their selectors, and the share of roots whose
children hash into the root's range."""

from __future__ import annotations

import sys

from tests.support.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import kep5866


def test_fnv1a_is_the_64_bit_fnv_1a() -> None:
    # the published test vectors (offset basis; "a"; "foobar")
    assert kep5866.fnv1a("") == 0xCBF29CE484222325
    assert kep5866.fnv1a("a") == 0xAF63DC4C8601EC8C
    assert kep5866.fnv1a("foobar") == 0x85944171F73967E8


def test_ranges_cover_the_hash_space_once_and_select_as_the_kep_writes_them() -> None:
    for n in (1, 2, 3, 4):
        bounds = kep5866.ranges(n)
        assert bounds[0][0] == 0
        assert bounds[-1][1] == 1 << 64
        assert all(bounds[i][1] == bounds[i + 1][0] for i in range(n - 1))
    start, end = kep5866.ranges(2)[1]
    assert kep5866.selector("uid", start, end) == (
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
    )


def test_together_counts_the_roots_whose_children_share_their_range() -> None:
    def obj(uid: str, namespace: str, owner: str | None = None) -> dict[str, object]:
        meta: dict[str, object] = {"uid": uid, "namespace": namespace}
        if owner:
            meta["ownerReferences"] = [{"uid": owner}]
        return {"metadata": meta}

    objects = [obj("r1", "ns-a"), obj("c1", "ns-a", "r1"), obj("c2", "ns-a", "r1")]
    objects += [obj("r2", "ns-b"), obj("c3", "ns-b", "r2")]
    assert kep5866.together(objects, "namespace", 4) == 1.0  # children share a namespace
    # by UID: a root is together only if every child's hash is in its range
    low = kep5866.fnv1a("r1") < 1 << 63
    expected = [all((kep5866.fnv1a(c) < 1 << 63) == low for c in ("c1", "c2"))]
    low2 = kep5866.fnv1a("r2") < 1 << 63
    expected.append((kep5866.fnv1a("c3") < 1 << 63) == low2)
    assert kep5866.together(objects, "uid", 2) == round(sum(expected) / 2, 3)

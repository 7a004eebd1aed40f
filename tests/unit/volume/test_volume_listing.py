"""volume.listing: Cinder's list parameters (limit, sort, marker, links)."""
import pytest

from volattach import exception
from volattach.volume import listing

KEYS = ("id", "name", "created_at", "size")


def test_limit_param():
    assert listing.limit_param(None) is None
    assert listing.limit_param("0") == 0
    assert listing.limit_param("5") == 5
    assert listing.limit_param("100000") == listing.MAX_LIMIT
    with pytest.raises(exception.InvalidInput,
                       match="limit param must be an integer"):
        listing.limit_param("abc")
    with pytest.raises(exception.InvalidInput,
                       match="limit param must be positive"):
        listing.limit_param("-1")


def test_sort_params_forms():
    assert listing.sort_params(allowed=KEYS) == listing.DEFAULT_SORT
    assert listing.sort_params("name:asc,size", allowed=KEYS) == [
        ("name", "asc"), ("size", "desc"), ("id", "desc")]
    assert listing.sort_params(sort_key="name", sort_dir="asc",
                               allowed=KEYS) == [("name", "asc"),
                                                 ("id", "asc")]
    assert listing.sort_params(sort_key="name,size", sort_dir="asc,desc",
                               allowed=KEYS) == [
        ("name", "asc"), ("size", "desc"), ("id", "desc")]


@pytest.mark.parametrize("kwargs,message", [
    ({"sort": "name", "sort_key": "size"}, "cannot be used with"),
    ({"sort": "name:up"}, "Unknown sort direction"),
    ({"sort": "password"}, "Invalid sort key password"),
])
def test_sort_params_refused(kwargs, message):
    with pytest.raises(exception.InvalidInput, match=message):
        listing.sort_params(allowed=KEYS, **kwargs)


def test_metadata_param():
    assert listing.metadata_param(None) is None
    assert listing.metadata_param("{'a': 'b'}") == {"a": "b"}
    assert listing.metadata_param('{"n": 1}') == {"n": "1"}
    for bad in ("[1]", "a=b", "{"):
        with pytest.raises(exception.InvalidInput):
            listing.metadata_param(bad)


def test_sort_items_multi_key_and_none_first():
    items = [{"id": "1", "name": "b", "size": 1},
             {"id": "2", "name": None, "size": 2},
             {"id": "3", "name": "a", "size": 1}]
    by_name = listing.sort_items(items, [("name", "asc"), ("id", "asc")])
    assert [i["id"] for i in by_name] == ["2", "3", "1"]
    by_size = listing.sort_items(items, [("size", "desc"), ("id", "asc")])
    assert [i["id"] for i in by_size] == ["2", "1", "3"]


def test_page_and_next_link():
    items = [{"id": str(n)} for n in range(5)]
    assert listing.page(items, limit=2) == items[:2]
    assert listing.page(items, marker="1", limit=2) == items[2:4]
    assert listing.page(items, marker="4") == []
    with pytest.raises(exception.InvalidInput, match=r"marker \[x\] not"):
        listing.page(items, marker="x")
    link = listing.next_link("http://h/v3/p/volumes",
                             {"limit": "2", "marker": "0", "name": "n"},
                             items[1:3], 2)
    assert link == [{"rel": "next", "href":
                     "http://h/v3/p/volumes?limit=2&name=n&marker=2"}]
    assert listing.next_link("u", {"limit": "3"}, items[:2], 3) is None
    assert listing.next_link("u", {}, items, None) is None

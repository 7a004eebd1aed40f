"""Query parameters of the volume service's lists, as Cinder reads them:
filters, sorting (``sort=key:dir,...`` or the older ``sort_key`` and
``sort_dir``), ``marker`` and ``limit``, and the ``<name>_links`` "next"
link of a page that is full.

Pure functions over the lists the manager returns; errors are
``exception.InvalidInput`` (400 at the edge), with Cinder's messages.
"""
import ast
import urllib.parse

from volattach import exception

MAX_LIMIT = 1000      # Cinder's osapi_max_limit
DEFAULT_SORT = [("created_at", "desc"), ("id", "desc")]
_DIRECTIONS = ("asc", "desc")


def limit_param(value, max_limit=MAX_LIMIT):
    """``limit`` as Cinder reads it (None when absent), capped."""
    if value is None:
        return None
    try:
        limit = int(value)
    except (TypeError, ValueError):
        raise exception.InvalidInput(message="limit param must be an integer")
    if limit < 0:
        raise exception.InvalidInput(message="limit param must be positive")
    return min(limit, max_limit)


def sort_params(sort=None, sort_key=None, sort_dir=None, allowed=()):
    """[(key, direction)] from ``sort`` or ``sort_key``/``sort_dir``.

    ``allowed``: the keys that may be sorted on; another is a 400."""
    if sort and (sort_key or sort_dir):
        raise exception.InvalidInput(
            message="The 'sort_key' and 'sort_dir' parameters are "
                    "deprecated and cannot be used with the 'sort' "
                    "parameter.")
    keys = []
    if sort:
        for item in sort.split(","):
            key, _, direction = item.strip().partition(":")
            keys.append((key.strip(), (direction.strip() or "desc").lower()))
    elif sort_key or sort_dir:
        key_list = (sort_key or "created_at").split(",")
        dir_list = (sort_dir or "desc").split(",")
        for i, key in enumerate(key_list):
            direction = dir_list[i] if i < len(dir_list) else dir_list[-1]
            keys.append((key.strip(), direction.strip().lower()))
    for key, direction in keys:
        if direction not in _DIRECTIONS:
            raise exception.InvalidInput(
                reason="Unknown sort direction, must be 'desc' or 'asc'")
        if key not in allowed:
            raise exception.InvalidInput(reason="Invalid sort key %s" % key)
    if not keys:
        return list(DEFAULT_SORT)
    if "id" not in [k for k, _ in keys]:
        keys.append(("id", keys[-1][1]))
    return keys


def metadata_param(value):
    """The ``metadata`` filter (``{'key': 'value'}``, as cinderclient
    sends it) as a dict."""
    if value is None:
        return None
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        parsed = None
    if not isinstance(parsed, dict):
        raise exception.InvalidInput(
            reason="metadata filter must be a dictionary, got %s" % value)
    return {str(k): str(v) for k, v in parsed.items()}


def _sort_value(item, key):
    value = item.get(key)
    # None sorts first ascending (as NULLs do in Cinder's MySQL).
    return (value is not None, value if value is not None else 0)


def sort_items(items, keys):
    for key, direction in reversed(keys):
        items = sorted(items, key=lambda item, k=key: _sort_value(item, k),
                       reverse=direction == "desc")
    return items


def page(items, marker=None, limit=None, id_key="id"):
    """The items after ``marker`` (an id among them; unknown: 400), at
    most ``limit`` of them."""
    if marker is not None:
        for index, item in enumerate(items):
            if item[id_key] == marker:
                items = items[index + 1:]
                break
        else:
            raise exception.InvalidInput(
                reason="marker [%s] not found" % marker)
    if limit is not None:
        items = items[:limit]
    return items


def next_link(req_url, params, items, limit, id_key="id"):
    """Cinder's ``<collection>_links``: one "next" link when the page is
    full (``limit`` items, or MAX_LIMIT without a limit); else None."""
    wanted = MAX_LIMIT if limit is None else limit
    if not items or len(items) < wanted:
        return None
    query = [(k, v) for k, v in params.items() if k != "marker"]
    query.append(("marker", items[-1][id_key]))
    return [{"rel": "next",
             "href": "%s?%s" % (req_url, urllib.parse.urlencode(query))}]

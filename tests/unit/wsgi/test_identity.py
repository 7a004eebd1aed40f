"""volattach.wsgi.identity: role lists from identity headers."""
from volattach.wsgi import identity


def test_roles_from_header():
    assert identity.roles_from_header("admin, member,,reader ") == [
        "admin", "member", "reader"]
    assert identity.roles_from_header(None) == []
    assert identity.roles_from_header(" , ") == []

"""Config drives as Nova writes them: an ISO9660 image labelled
``config-2`` holding ``openstack/latest/meta_data.json`` (and
``openstack/latest/user_data`` when the server has user data), built with
genisoimage."""
import json
import os
import subprocess
import tempfile

LABEL = "config-2"


def meta_data(instance):
    return {
        "uuid": instance.uuid,
        "name": instance.display_name or "",
        "hostname": instance.hostname or "",
        # the zone of the host, the only one (the server's
        # availability_zone is what it is pinned to, maybe "zone:host")
        "availability_zone": "nova",
        "launch_index": instance.launch_index,
        "meta": dict(instance.metadata or {}),
        "project_id": instance.project_id,
        "devices": [],
    }


def make_config_drive(path, instance, user_data=None):
    """Write the config drive of ``instance`` to ``path``; ``user_data``
    is bytes (already decoded from base64) or None."""
    with tempfile.TemporaryDirectory() as tmp:
        latest = os.path.join(tmp, "openstack", "latest")
        os.makedirs(latest)
        with open(os.path.join(latest, "meta_data.json"), "w") as f:
            json.dump(meta_data(instance), f)
        if user_data is not None:
            with open(os.path.join(latest, "user_data"), "wb") as f:
                f.write(user_data)
        subprocess.run(
            ["genisoimage", "-o", path, "-ldots", "-allow-lowercase",
             "-allow-multidot", "-l", "-publisher", "volattach", "-quiet",
             "-J", "-r", "-V", LABEL, tmp],
            check=True, capture_output=True)

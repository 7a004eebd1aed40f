"""What a volume's read-only Ceph identity adds to an attach and a detach.

    .venv/bin/python -m benchmarks.rbd_identity [--cycles 30]

Against the cluster of tools/start-ceph.sh (``/etc/ceph/ceph.conf``,
client.admin), with the rbd backend itself on one multiattach image: per
cycle, a read-write connection (what every attach pays: ``mon dump``, the
fsid), the first read-only connection (the same, plus the image's id, the
pool's image list, ``auth get-or-create``), a second read-only connection
(``auth get-or-create`` of an existing user), and the last read-only
disconnect (``auth del``).  Prints median and p95 (nearest rank) of each in
milliseconds; the extra cost is the read-only rows minus the read-write one.
"""
import argparse
import math
import time
import uuid

from volattach.volume.backends import rbd as rbd_backend

CONNECTOR = {"host": "bench", "initiator": "iqn.bench"}


def _pct(samples, p):
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=30)
    parser.add_argument("--pool", default="volumes")
    parser.add_argument("--ceph-conf", default="/etc/ceph/ceph.conf")
    args = parser.parse_args(argv)
    backend = rbd_backend.RBDBackend(
        "rbd", "bench", args.pool, args.ceph_conf, "ceph",
        readonly_user="volattach-bench-ro", attach_user="admin")
    volume = {"id": str(uuid.uuid4()), "size": 1, "multiattach": True}
    backend.create_volume(volume)
    rows = {k: [] for k in ("rw connect", "first ro connect",
                            "next ro connect", "last ro disconnect")}

    def timed(row, call, *a, **kw):
        start = time.perf_counter()
        call(*a, **kw)
        rows[row].append((time.perf_counter() - start) * 1000)
    try:
        backend.initialize_connection(volume, "warm", CONNECTOR, "rw")
        for i in range(args.cycles):
            timed("rw connect", backend.initialize_connection, volume,
                  "rw-%d" % i, CONNECTOR, "rw")
            timed("first ro connect", backend.initialize_connection, volume,
                  "ro-%d" % i, CONNECTOR, "ro")
            timed("next ro connect", backend.initialize_connection, volume,
                  "ro2-%d" % i, CONNECTOR, "ro")
            timed("last ro disconnect", backend.terminate_connection, volume,
                  {"id": "ro-%d" % i, "attach_mode": "ro"}, CONNECTOR,
                  remaining=[])
    finally:
        backend.delete_volume(volume)
    print("%-20s %8s %8s   (%d cycles, ms)" % ("", "median", "p95",
                                               args.cycles))
    for row, samples in rows.items():
        print("%-20s %8.1f %8.1f" % (row, _pct(samples, 50),
                                     _pct(samples, 95)))


if __name__ == "__main__":
    main()

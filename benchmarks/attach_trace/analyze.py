"""Split each traced attach (see sitecustomize.py) into: the server's part
(POST os-volume_attachments until the compute's attach_volume returned),
the libvirt hot-plug within it, and the guest's part (until
Guest.wait_disk saw the disk); prints median and max of each, and the
mean per traced function."""
import collections
import statistics
import sys


def main(path):
    rows = sorted((float(line.split()[0]), float(line.split()[1]),
                   line.split()[2], float(line.split()[3]))
                  for line in open(path))
    posts = [r for r in rows if r[2] == "ComputeClient.attach_volume"]
    out = collections.defaultdict(list)
    for i, p in enumerate(posts):
        nxt = posts[i + 1][0] if i + 1 < len(posts) else float("inf")
        seg = [r for r in rows if p[0] <= r[0] < nxt]
        cm = [r for r in seg if r[2] == "ComputeManager.attach_volume"]
        lv = [r for r in seg if r[2] == "LibvirtDriver.attach_volume"]
        wd = [r for r in seg if r[2] == "Guest.wait_disk"]
        if not (cm and wd and lv):
            continue
        out["POST -> plugged"].append(cm[0][1] - p[0])
        out["  of which the libvirt hot-plug"].append(lv[0][1] - lv[0][0])
        out["plugged -> the guest lists it"].append(wd[0][1] - cm[0][1])
        out["POST -> the guest lists it"].append(wd[0][1] - p[0])
    for name, values in out.items():
        print("%-34s median %.3f s  max %.3f s  (n=%d)" % (
            name, statistics.median(values), max(values), len(values)))
    per = collections.defaultdict(list)
    for r in rows:
        per[r[2]].append(r[3])
    for name in sorted(per):
        print("%-48s n=%-3d mean %.4f s" % (name, len(per[name]),
                                           statistics.mean(per[name])))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1
         else "/tmp/volattach-attach-trace.log")

#!/usr/bin/env python3
"""Make a test CA and the certificates of NBD over TLS (the file backend).

    tools/make-nbd-certs.py DIR --server-address 10.0.0.5 \\
        --client compute1 --client compute2

writes DIR/ca/ (the CA's certificate and key: keep the key), DIR/server/
(ca-cert.pem, server-cert.pem, server-key.pem: the volume host's
[volume] nbd_tls_dir) and DIR/<client>/ (ca-cert.pem, client-cert.pem,
client-key.pem: that compute's [libvirt] nbd_tls_dir, also libvirt's
nbd_tls_x509_cert_dir), then prints the [volume] nbd_tls_allowed_clients
lines.  The server certificate names every --server-address and
--server-name (QEMU's NBD client checks the address it connects to).  For
tests and trials; a real deployment's certificates come from its own CA.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from volattach import nbd_certs  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--server-address", action="append", default=[],
                        help="an address computes connect to (repeat)")
    parser.add_argument("--server-name", action="append", default=[],
                        help="a DNS name computes connect to (repeat)")
    parser.add_argument("--client", action="append", default=[],
                        help="a compute's certificate common name (repeat)")
    parser.add_argument("--days", type=int, default=365)
    args = parser.parse_args(argv)
    if not args.server_address and not args.server_name:
        args.server_address = ["127.0.0.1"]
    ca = nbd_certs.Authority.create(days=args.days)
    ca.write(os.path.join(args.directory, "ca"), with_key=True)
    ca.issue(os.path.join(args.directory, "server"), "volattach-nbd-server",
             server=True, addresses=args.server_address,
             dns_names=args.server_name, days=args.days)
    print("[volume]")
    print("nbd_tls = true")
    print("nbd_tls_dir = %s" % os.path.abspath(
        os.path.join(args.directory, "server")))
    for client in args.client:
        dname = ca.issue(os.path.join(args.directory, client), client,
                         days=args.days)
        print("nbd_tls_allowed_clients = %s" % dname)


if __name__ == "__main__":
    main()

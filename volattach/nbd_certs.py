"""Test certificates for NBD over TLS: a CA, the NBD server's certificate
and the computes' client certificates, in QEMU's usual file names.

QEMU's ``tls-creds-x509`` reads a directory: ``ca-cert.pem`` plus
``server-cert.pem``/``server-key.pem`` (the volume service's
``[volume] nbd_tls_dir``) or ``client-cert.pem``/``client-key.pem`` (a
compute's ``[libvirt] nbd_tls_dir``, libvirt's ``nbd_tls_x509_cert_dir``).
The server's ``tls-authz`` lets in the clients whose distinguished name
(as GnuTLS prints it: ``O=volattach,CN=compute1``) it lists
(``[volume] nbd_tls_allowed_clients``).  ``tools/make-nbd-certs.py`` is the
command line; the tests use the functions.  For tests and trials: a real
deployment's certificates come from its own CA.
"""
import datetime
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.oid import NameOID

ORGANIZATION = "volattach"
CA_CERT, CA_KEY = "ca-cert.pem", "ca-key.pem"
SERVER_CERT, SERVER_KEY = "server-cert.pem", "server-key.pem"
CLIENT_CERT, CLIENT_KEY = "client-cert.pem", "client-key.pem"


class Authority:
    """A CA: its key and self-signed certificate."""

    def __init__(self, key, cert):
        self.key, self.cert = key, cert

    @classmethod
    def create(cls, common_name="volattach test CA", days=365):
        key = _key()
        name = _name(common_name)
        now = _now()
        cert = (x509.CertificateBuilder()
                .subject_name(name).issuer_name(name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=days))
                .add_extension(x509.BasicConstraints(ca=True, path_length=0),
                               critical=True)
                .add_extension(x509.KeyUsage(
                    digital_signature=False, content_commitment=False,
                    key_encipherment=False, data_encipherment=False,
                    key_agreement=False, key_cert_sign=True, crl_sign=True,
                    encipher_only=False, decipher_only=False), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(
                    key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        return cls(key, cert)

    def write(self, directory, with_key=False):
        """``ca-cert.pem`` (and ``ca-key.pem``) into ``directory``."""
        os.makedirs(directory, exist_ok=True)
        _write(os.path.join(directory, CA_CERT), _cert_pem(self.cert))
        if with_key:
            _write(os.path.join(directory, CA_KEY), _key_pem(self.key), 0o600)

    def issue(self, directory, common_name, server=False, addresses=(),
              dns_names=(), days=365, not_before=None):
        """A certificate signed by this CA, with its key and the CA's
        certificate, into ``directory`` as QEMU names them (server or
        client files).  ``addresses``/``dns_names``: the server's names
        its clients connect to (subjectAltName; QEMU's NBD client checks
        them).  ``not_before``: a datetime (an expired certificate for
        tests).  Returns the subject's distinguished name as QEMU sees it."""
        key = _key()
        start = not_before or (_now() - datetime.timedelta(minutes=5))
        builder = (x509.CertificateBuilder()
                   .subject_name(_name(common_name))
                   .issuer_name(self.cert.subject)
                   .public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(start)
                   .not_valid_after(start + datetime.timedelta(days=days))
                   .add_extension(x509.BasicConstraints(ca=False,
                                                        path_length=None),
                                  critical=True)
                   .add_extension(x509.KeyUsage(
                       digital_signature=True, content_commitment=False,
                       key_encipherment=True, data_encipherment=False,
                       key_agreement=False, key_cert_sign=False,
                       crl_sign=False, encipher_only=False,
                       decipher_only=False), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(
                       [ExtendedKeyUsageOID.SERVER_AUTH if server
                        else ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier
                                  .from_issuer_public_key(
                                      self.key.public_key()), critical=False))
        sans = ([x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
                + [x509.DNSName(n) for n in dns_names])
        if sans:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        self.write(directory)
        cert_file, key_file = ((SERVER_CERT, SERVER_KEY) if server
                               else (CLIENT_CERT, CLIENT_KEY))
        _write(os.path.join(directory, cert_file), _cert_pem(cert))
        _write(os.path.join(directory, key_file), _key_pem(key), 0o600)
        return distinguished_name(cert)


def distinguished_name(cert):
    """The subject of ``cert`` as QEMU's authz sees it: GnuTLS prints the
    RDNs in the certificate's order (``O=volattach,CN=compute1``), which
    is RFC 4514's string reversed."""
    return ",".join(rdn.rfc4514_string() for rdn in cert.subject.rdns)


def _name(common_name):
    return x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
        x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _cert_pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path, data, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)

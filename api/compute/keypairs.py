"""Key pairs (os-keypairs): import or generate, list, show, delete, and the
``key_name`` check of server create. Keys are per user, as in Nova."""
import base64
import hashlib

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from volattach.api.compute import base
from volattach import objects
from volattach import exception


def fingerprint(public_key):
    """The MD5 fingerprint of an OpenSSH public key, as Nova shows it
    (``aa:bb:...``); InvalidKeypair when it does not parse."""
    try:
        serialization.load_ssh_public_key(public_key.encode())
        blob = base64.b64decode(public_key.split()[1])
    except Exception:
        raise exception.InvalidKeypair(
            reason="failed to generate fingerprint")
    digest = hashlib.md5(blob, usedforsecurity=False).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


def generate():
    """A new RSA key: (private key PEM, OpenSSH public key)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()
    return private, public + " Generated-by-Nova"


class KeypairsAPI(base.FacadeBase):

    def keypair_create(self, context, user_id, name, public_key=None,
                       key_type="ssh"):
        """Import ``public_key`` or generate one; returns (KeyPair, private key
        or None)."""
        self.check_key_pairs_quota(context, user_id)
        private = None
        if public_key is None:
            private, public_key = generate()
        keypair = objects.KeyPair(
            context, user_id=user_id, name=name, public_key=public_key,
            fingerprint=fingerprint(public_key), type=key_type)
        keypair.create()
        return keypair, private

    def keypair_list(self, context, user_id):
        return objects.KeyPairList.get_by_user(context, user_id)

    def keypair_get(self, context, user_id, name):
        return objects.KeyPair.get_by_name(context, user_id, name)

    def keypair_delete(self, context, user_id, name):
        objects.KeyPair.destroy_by_name(context, user_id, name)

    def check_key_name(self, context, key_name):
        """Server create: the key must be one of the caller's (400)."""
        try:
            objects.KeyPair.get_by_name(context, context.user_id, key_name)
        except exception.KeypairNotFound:
            raise exception.InvalidInput(message="Invalid key_name provided.")

"""Packaging: every role folder at the repository's root installs as a
subpackage of ``volattach`` (``api/`` -> ``volattach.api``, ...), so the
wheel has exactly one top-level name.  Metadata lives in setup.cfg."""
import setuptools

# The folders the user asked for, each one role; ``volattach/`` itself
# holds what they share (configuration, context, exceptions, console
# scripts).
ROLE_FOLDERS = ("api", "compute", "conductor", "db", "objects", "rpc", "volume")


def _packages():
    packages = ["volattach"] + [
        "volattach." + name for name in setuptools.find_packages("volattach")]
    package_dir = {"volattach": "volattach"}
    for folder in ROLE_FOLDERS:
        package_dir["volattach." + folder] = folder
        packages.append("volattach." + folder)
        packages += ["volattach.%s.%s" % (folder, sub)
                     for sub in setuptools.find_packages(folder)]
    return packages, package_dir


PACKAGES, PACKAGE_DIR = _packages()

setuptools.setup(packages=PACKAGES, package_dir=PACKAGE_DIR)

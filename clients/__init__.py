"""kraft's client side: the record-batch format, codecs, error codes, the trio<->gRPC bridge,
the generated wire modules, the Producer / Consumer / Admin, the command-line tools and the
Spark data source (spark/)."""

from importlib import metadata as _metadata

try:
    # The one version: pyproject.toml's, as installed (`kraft --version` prints it).
    __version__ = _metadata.version("kraft")
except _metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

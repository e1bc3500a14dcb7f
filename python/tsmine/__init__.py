# SPDX-License-Identifier: Apache-2.0
"""tsmine: exact matrix profile, discords and motifs on numpy arrays.

The same C kernels as the ``tsmine`` command and the ``tsmined`` daemon (an OpenMP CPU
backend, and a CUDA one where the package was built with it and a GPU is present),
called without the GIL.

Batch functions: :func:`profile`, :func:`discords`, :func:`range_discords`,
:func:`motifs`, :func:`auto_m`. STUMPY-compatible: :func:`stump`, :func:`gpu_stump`,
and :class:`stumpi`, the incremental profile. What this build and machine offer:
:func:`backends`.

tsmined's detection in the process, no daemon: :class:`Detector` (values in, the
scores and alerts the daemon would publish out), :func:`detect` (what ``tsmine detect``
prints), :func:`stream_settings`; and :func:`score`, ``tsmine score`` on them.

The daemon's client (the ``client`` extra: pyzmq, protobuf): :class:`Publisher`,
:func:`alerts`, :func:`status`, from :mod:`tsmine.client`, imported on first use.

Errors raise :class:`Error` or one of its subclasses, with the C library's message:
:class:`InvalidArgumentError` (also a ``ValueError``), :class:`BackendError`,
:class:`DeviceError` (both also ``RuntimeError``), :class:`OutOfMemoryError` (also a
``MemoryError``). Wrong argument types raise ``TypeError``.
"""

from importlib.metadata import PackageNotFoundError, version

from ._batch import (
    DISCORD_DTYPE,
    MOTIF_DTYPE,
    Profile,
    Records,
    auto_m,
    backends,
    discords,
    motifs,
    profile,
    range_discords,
)
from ._score import score
from ._stream import SCORE_DTYPE, Detector, Update, detect, stream_settings, stumpi
from ._stumpy import gpu_stump, mparray, stump
from ._tsmine import (
    BackendError,
    DeviceError,
    Error,
    InvalidArgumentError,
    OutOfMemoryError,
)

try:
    __version__ = version("tsmine")
except PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "unknown"

_CLIENT = ("Publisher", "alerts", "status")


def __getattr__(name):
    """tsmine.Publisher, alerts and status: tsmine.client's, imported when first asked for
    (it needs pyzmq and protobuf, which the batch functions do not)."""
    if name in _CLIENT:
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module 'tsmine' has no attribute {name!r}")


__all__ = [
    "DISCORD_DTYPE",
    "MOTIF_DTYPE",
    "SCORE_DTYPE",
    "BackendError",
    "Detector",
    "DeviceError",
    "Error",
    "InvalidArgumentError",
    "OutOfMemoryError",
    "Profile",
    "Records",
    "Update",
    "auto_m",
    "backends",
    "detect",
    "discords",
    "gpu_stump",
    "motifs",
    "mparray",
    "profile",
    "range_discords",
    "score",
    "stream_settings",
    "stump",
    "stumpi",
]

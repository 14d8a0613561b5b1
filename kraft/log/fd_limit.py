"""Raise this process's open-file soft limit to its hard limit at node start: every partition
holds file descriptors, and the soft limit as found (often 1024) caps a broker's partitions."""

from __future__ import annotations

import logging
import resource

_logger = logging.getLogger(__name__)


def raise_fd_limit() -> int:
    """Set RLIMIT_NOFILE's soft limit to the hard limit; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft >= hard:
        return soft
    # An unlimited hard limit cannot be a soft one everywhere (macOS); the kernel's cap can.
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        _logger.debug("open-file limit stays at %d (hard %d): %s", soft, hard, exc)
        return soft
    _logger.debug("open-file limit raised from %d to %d (the hard limit)", soft, target)
    return target

# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The errors of the ISO, initrd and Ignition readers: one root, so a caller can catch them all."""

from __future__ import annotations

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error


class IsoError(Day2Error):
    """Base class of every error raised by the ISO, initrd and Ignition readers and the kernel-argument edit."""


class IsoLayoutError(IsoError):
    """The file is not a CoreOS live ISO (or initrd) we can read or edit: missing file, bad JSON, bad offsets."""


class EmbedAreaError(IsoError):
    """The Ignition embed area (or an initrd) holds data that cannot be decoded."""


class CapacityError(IsoError):
    """New content does not fit into its area."""


class KargsMismatchError(IsoError):
    """The kernel-argument regions of one ISO do not hold the same arguments."""


class IgnitionContentError(IsoError):
    """The Ignition config is not JSON, or a file in it cannot be decoded."""

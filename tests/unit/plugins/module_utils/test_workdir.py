# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The work directory check: owner, mode, symlinked artifacts; reads that never follow a symlink."""

import errno
import os

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import workdir

OTHER = 65534  # nobody


def problems_of(path):
    problems = Problems()
    assert workdir.check(str(path), "(play)", "day2_workdir", problems) is problems
    return [problem["message"] for problem in problems.items]


def test_a_private_directory_of_ours_and_a_missing_one_pass(tmp_path):
    private = tmp_path / "work"
    private.mkdir(mode=0o700)
    (private / "node.x86_64.iso").write_bytes(b"iso")
    (private / "boot-artifacts" / "x86_64").mkdir(parents=True)
    (private / "notes.txt").symlink_to("/etc/hostname")  # not a file of the collection
    assert problems_of(private) == [] and problems_of(tmp_path / "absent") == []


def test_others_can_write_it(tmp_path):
    os.chmod(tmp_path, 0o777)
    (message,) = problems_of(tmp_path)
    assert message.startswith(f'play: field "day2_workdir" value "{tmp_path}" can be written by others (mode 0777)')
    assert f"chmod 0700 {tmp_path}" in message and "pull secret" in message


def test_owned_by_another_user(tmp_path):
    """The tests run as root (make test), which may chown."""
    os.chown(tmp_path, OTHER, OTHER)
    (message,) = problems_of(tmp_path)
    assert f"is owned by user nobody (uid {OTHER}), not by root (uid 0)" in message


def test_symlinked_artifacts_anywhere_under_it(tmp_path):
    target = tmp_path / "victim"
    target.write_text("theirs")
    work = tmp_path / "work"
    (work / "boot-artifacts" / "x86_64").mkdir(parents=True, mode=0o700)
    (work / "node.x86_64.iso").symlink_to(target)
    (work / "boot-artifacts" / "x86_64" / "node.x86_64-initrd.img").symlink_to(target)
    messages = problems_of(work)
    assert len(messages) == 2 and all(f"(to {target})" in m and "rm " in m for m in messages)
    assert target.read_text() == "theirs"


def test_a_symlinked_directory_of_ours_is_checked_where_it_points(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o777)
    os.chmod(real, 0o777)
    (tmp_path / "link").symlink_to(real)
    (message,) = problems_of(tmp_path / "link")
    assert "can be written by others" in message


def test_open_nofollow_refuses_a_symlink(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    with workdir.open_nofollow(str(tmp_path / "file"), "r") as handle:
        assert handle.read() == "x"
    with pytest.raises(OSError) as caught:
        workdir.open_nofollow(str(tmp_path / "link"))
    assert caught.value.errno == errno.ELOOP

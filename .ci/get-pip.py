# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline stand-in for the get-pip.py that ansible-test downloads to bootstrap pip.

`ansible-test --venv` creates each virtualenv without pip and then runs a get-pip.py script
fetched from a host CI cannot reach, unless a copy is cached as
~/.ansible/test/cache/get_pip_<version>.py. .ci/sanity.sh installs this file there.

get-pip.py takes `pip install` arguments plus its own --no-setuptools / --no-wheel switches.
This script installs the pip wheel bundled with the interpreter (ensurepip, no network), then
lets that pip install the requested packages (e.g. pip==25.2) from the configured index.
"""

import subprocess
import sys

# Options that only get-pip.py understands: ensurepip installs neither package anyway.
GET_PIP_ONLY_OPTIONS = ("--no-setuptools", "--no-wheel")


def main(argv):
    pip_install_args = [arg for arg in argv if arg not in GET_PIP_ONLY_OPTIONS]
    for command in (
        [sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"],
        [sys.executable, "-m", "pip", "install", *pip_install_args],
    ):
        returncode = subprocess.call(command)
        if returncode != 0:
            return returncode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

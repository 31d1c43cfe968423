"""The build step of the Python package (pyproject.toml holds the rest):
make builds libted.so ($(BUILD)/libted.so, the library compiled with -fPIC)
and it is copied into the package, python/ted/libted.so, which ships it.
TED_BUILD names the build folder (default build); SAN=1 builds the
sanitized library into build-san, as `make SAN=1` does.

The wheel is tagged py3-none-PLATFORM: the package is pure Python over a C
library that it loads with ctypes, which no Python version's ABI touches,
so one wheel serves every Python 3 of that platform."""
import os
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools before 70.1: the wheel package's
    from wheel.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildLibted(build_py):
    def run(self):
        san = os.environ.get("SAN") == "1"
        build = os.environ.get("TED_BUILD", "build-san" if san else "build")
        jobs = os.environ.get("TED_JOBS", "2")
        command = ["make", "-C", ROOT, "-j" + jobs, "BUILD=" + build,
                   os.path.join(build, "libted.so")]
        if san:
            command.append("SAN=1")
        subprocess.check_call(command)
        shutil.copyfile(os.path.join(ROOT, build, "libted.so"),
                        os.path.join(ROOT, "python", "ted", "libted.so"))
        super().run()


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: a platform wheel, not a pure one."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """py3-none-PLATFORM: any Python 3, no Python ABI, this platform."""

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(cmdclass={"build_py": BuildLibted, "bdist_wheel": PlatformWheel},
      distclass=BinaryDistribution)

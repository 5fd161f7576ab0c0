"""Package discovery: `nbtorch/` plus the top-level `kernels/` installed as `nbtorch.kernels`.

(pyproject.toml's static `packages` table cannot map one folder into another
package and also find subpackages, so the list is computed here.)
"""
from setuptools import find_packages, setup

kernel_packages = ["nbtorch.kernels"] + [
    "nbtorch.kernels." + p for p in find_packages("kernels")]
package_dir = {"nbtorch.kernels": "kernels"}

setup(
    packages=find_packages(include=["nbtorch", "nbtorch.*"]) + kernel_packages,
    package_dir=package_dir,
)

"""Builds the optional C accelerator of the record decoder; everything else is in pyproject.toml.

The accelerator is optional: where it cannot be compiled, the pure-Python twin is used (with a
warning). It uses CPython's stable ABI (3.11+), so the wheel is ``cp311-abi3``: one build runs
on every later Python of the platform (a Databricks runtime's, an image's).
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # a missing compiler must not stop the install
            print(f"warning: C accelerator not built ({e}); using the pure-Python decoder")


setup(
    ext_modules=[
        Extension(
            "segcompact.format._crecords",
            sources=["src/segcompact/format/_crecords.c"],
            extra_compile_args=["-O3"],
            py_limited_api=True,
            optional=True,
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)

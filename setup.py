"""Builds the optional C accelerator of the record decoder; everything else is in pyproject.toml.

The accelerator is optional: where it cannot be compiled, the pure-Python twin is used.
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
            optional=True,
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)

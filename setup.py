"""Builds the optional C accelerators (the record decoder, the compaction front); everything else
is in pyproject.toml.

They are optional: where they cannot be compiled, the pure-Python twins are used (with a
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
            print(f"warning: C accelerators not built ({e}); using the pure-Python twins")


setup(
    ext_modules=[
        Extension(
            f"segcompact.{name}",
            sources=[f"src/segcompact/{name.replace('.', '/')}.c"],
            extra_compile_args=["-O3"],
            py_limited_api=True,
            optional=True,
        )
        for name in ("format._crecords", "compaction._cfront")
    ],
    cmdclass={"build_ext": OptionalBuildExt},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)

"""Package list for setuptools: the app's packages under app/, plus resources/ and profiles/ shipped as
llm_dyno._shipped.resources / .profiles (pyproject's package-dir maps them; a find directive cannot)."""

from setuptools import find_namespace_packages, setup

setup(
    packages=[
        *find_namespace_packages("app", include=["llm_dyno*"]),
        "llm_dyno._shipped.resources",
        "llm_dyno._shipped.profiles",
    ]
)

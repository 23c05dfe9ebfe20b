from setuptools import setup

# Metadata lives in pyproject.toml; this file keeps `python setup.py` tooling working.
setup()

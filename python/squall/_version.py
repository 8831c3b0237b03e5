"""squall's version, in a module of its own: the modules that need it do not import the package."""

__version__ = "0.1.0"

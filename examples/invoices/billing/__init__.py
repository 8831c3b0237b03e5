"""A tiny invoice-processing package: the example program squall ships with."""

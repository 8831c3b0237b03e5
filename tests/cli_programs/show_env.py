"""Prints what a script sees of how it was started (compared between python and squall)."""
import os
import pickle
import sys
from importlib.machinery import SourceFileLoader
from dataclasses import dataclass


@dataclass
class Point:
    x: int
    y: int


class Box:
    def __init__(self, v):
        self.v = v


print("argv", sys.argv)
print("name", __name__)
print("file", __file__)
print("path0", sys.path[0])
print("spec", __spec__ and (__spec__.name, __spec__.origin, __spec__.parent))
print("package", __package__)
print("cached", globals().get("__cached__"))
print("globals", sorted(k for k in globals() if k.startswith("__")))
print("main is me", sys.modules["__main__"].__dict__ is globals())
print("loader", isinstance(__loader__, SourceFileLoader), __loader__.get_filename() == __file__)
print("pickle", pickle.loads(pickle.dumps(Point(1, 2))), pickle.loads(pickle.dumps(Box(3))).v)
print("cwd-relative", os.path.relpath(__file__))

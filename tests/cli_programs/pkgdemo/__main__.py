import sys

from .tool import double

print("pkg argv", sys.argv[1:], "name", __name__, "package", __package__)
print("spec", __spec__.name, "path0", sys.path[0])
print("double", double(21))

import sys


def double(x):
    return 2 * x


if __name__ == "__main__":
    print("tool argv", sys.argv)
    print("spec", __spec__.name, __package__)
    print("double", double(int(sys.argv[1])))

"""print, sys.stdout.write, writelines, stderr, print(file=...), sys.__stdout__, a big write, a
write from an uninstrumented module, non-ASCII text."""

import sys
import textwrap


def greet(name):
    print("hello", name, sep=", ", end="!\n")
    return len(name)


def report(n):
    sys.stdout.write(f"report {n}\n")
    sys.stderr.write(f"warning {n}\n")
    print("to stderr via print", n, file=sys.stderr)
    sys.__stdout__.write("through __stdout__\n")
    sys.stdout.writelines(["line a\n", "line b\n"])
    return n


def big():
    text = "x" * 99_999 + "\n"
    written = sys.stdout.write(text)
    print("written", written)


greet("ada")
report(3)
print(textwrap.dedent("    from textwrap\n"), end="")
text = "".join(["héllo wörld ", "✓ 😀"])  # built at run time: not a constant shared with the code
size = sys.getsizeof(text)
print(text)
print("size unchanged by printing:", sys.getsizeof(text) == size)
big()
print("done", flush=True)

"""Records objects whose special methods, attribute hooks and properties log each call
(spymod.py): as call arguments, return values, expression values and locals, alone and inside
builtin containers, and one set as a dict key. The program itself uses each of them once, so the
log of a plain run is not empty. Recording, saving and querying must add no line to the log.
"""

import spymod


def take(v):
    return None


def give(v):
    return v


def record(v):
    take(v)
    kept = give(v)
    box = [kept]
    if box[0] is not None:
        pass
    return kept


def main():
    spy = spymod.Spy(1)
    slots = spymod.SpySlots(2)
    spy_list = spymod.SpyList([spymod.Spy(3), 4])
    spy_dict = spymod.SpyDict(a=spymod.Spy(5))
    for v in (spy, slots, spy_list, spy_dict, [spy, slots], {"spy": spy}, (spy_list, spy_dict), {spy: 1}):
        record(v)
    # the program's own uses, once each
    print(repr(spy), str(spy), len(spy), list(iter(spy)), spy == spy, hash(spy), spy.prop, spy.n)
    print(repr(slots), slots.n, slots.prop)
    print(repr(spy_list), len(spy_list), spy_list[1], spy_list == [1])
    print(repr(spy_dict), len(spy_dict), list(spy_dict.keys()), spy_dict == {})
    print("done")


if __name__ == "__main__":
    main()

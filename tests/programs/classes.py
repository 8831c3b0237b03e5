"""Methods, classmethod, staticmethod and property.

Temperature objects are recorded by reference (only builtin containers are snapshotted), so the
call tree shows each one with its final state: t is Temperature(90) even in its own __init__.
"""


class Temperature:
    scale = "C"

    def __init__(self, degrees):
        self._degrees = degrees

    @classmethod
    def from_fahrenheit(cls, f):
        return cls(Temperature.f_to_c(f))

    @staticmethod
    def f_to_c(f):
        return (f - 32) * 5 // 9

    @property
    def degrees(self):
        return self._degrees

    @degrees.setter
    def degrees(self, value):
        self._degrees = value

    def warmer(self, by):
        return Temperature(self.degrees + by)

    def __repr__(self):
        return f"Temperature({self._degrees})"


t = Temperature.from_fahrenheit(212)
t.degrees = t.degrees - 10
print(t.warmer(5))

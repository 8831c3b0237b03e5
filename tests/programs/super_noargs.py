"""super() without arguments through a three-level hierarchy."""


class Base:
    def describe(self, tag):
        return [f"Base({tag})"]


class Middle(Base):
    def describe(self, tag):
        return super().describe(tag) + ["Middle"]


class Leaf(Middle):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def describe(self, tag):
        return super().describe(tag.upper()) + [self.name]


print(Leaf("leaf").describe("x"))

"""Writes a project with a pytest suite of N tests (default 5,000), for measuring the end-of-run
save of a recorded test suite (docs/realworld.md, "A 5,000-test suite").

    python tests/realworld/make_suite.py OUT_DIR [--tests N]

OUT_DIR gets a small pure-Python library, ``shopkit`` (dataclass items and carts, a price
parser, discounts, an order ledger with history, a text report), and ``tests/test_NN.py`` files
of 78 tests each in the shapes real suites have: plain test functions, ``parametrize``d cases,
fixtures building fresh objects, test classes, expected exceptions. Each test does real work in
the library (a cart of up to 60 items, a ledger of 200 orders), so that the recording holds
calls, objects, containers and writes, as a real suite's does. Deterministic: same N, same files.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

PER_FILE = 78  # tests in one FILE: 20 + 6 + 20 + 10 parametrized, 10 + 5 in the class, 5 + 1 + 1

LIBRARY = '''\
"""shopkit: items, carts, discounts, a ledger: the library the generated suite tests."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PRICE = re.compile(r"^\\s*(?P<currency>[A-Z]{3})\\s+(?P<units>\\d+)(?:\\.(?P<cents>\\d{1,2}))?\\s*$")


class PriceError(ValueError):
    pass


@dataclass
class Money:
    currency: str
    cents: int

    def __add__(self, other: "Money") -> "Money":
        if other.currency != self.currency:
            raise PriceError(f"cannot add {other.currency} to {self.currency}")
        return Money(self.currency, self.cents + other.cents)

    def times(self, n: int) -> "Money":
        return Money(self.currency, self.cents * n)

    def __str__(self) -> str:
        return f"{self.currency} {self.cents // 100}.{self.cents % 100:02d}"


def parse_price(text: str) -> Money:
    m = PRICE.match(text)
    if m is None:
        raise PriceError(f"not a price: {text!r}")
    cents = int((m.group("cents") or "0").ljust(2, "0"))
    return Money(m.group("currency"), int(m.group("units")) * 100 + cents)


@dataclass
class Item:
    sku: str
    name: str
    price: Money
    tags: list = field(default_factory=list)


@dataclass
class Line:
    item: Item
    quantity: int

    def total(self) -> Money:
        return self.item.price.times(self.quantity)


class Cart:
    def __init__(self, currency: str = "EUR"):
        self.currency = currency
        self.lines: dict = {}
        self.coupons: list = []

    def add(self, item: Item, quantity: int = 1) -> None:
        if quantity <= 0:
            raise ValueError(f"quantity must be positive, got {quantity}")
        line = self.lines.get(item.sku)
        if line is None:
            self.lines[item.sku] = Line(item, quantity)
        else:
            line.quantity += quantity

    def remove(self, sku: str) -> None:
        del self.lines[sku]

    def subtotal(self) -> Money:
        total = Money(self.currency, 0)
        for line in self.lines.values():
            total = total + line.total()
        return total

    def total(self) -> Money:
        amount = self.subtotal()
        for coupon in self.coupons:
            amount = coupon.apply(amount, self)
        return amount


@dataclass
class Percent:
    percent: int

    def apply(self, amount: Money, cart: Cart) -> Money:
        return Money(amount.currency, amount.cents * (100 - self.percent) // 100)


@dataclass
class BuyNGetOne:
    sku: str
    n: int

    def apply(self, amount: Money, cart: Cart) -> Money:
        line = cart.lines.get(self.sku)
        if line is None:
            return amount
        free = line.quantity // (self.n + 1)
        return Money(amount.currency, amount.cents - free * line.item.price.cents)


class Ledger:
    def __init__(self):
        self.orders: list = []
        self.by_customer: dict = {}
        self.history: list = []

    def record(self, customer: str, cart: Cart) -> int:
        number = len(self.orders) + 1
        total = cart.total()
        self.orders.append((number, customer, total))
        self.by_customer.setdefault(customer, []).append(number)
        self.history.append(("record", number, total.cents))
        return number

    def refund(self, number: int) -> Money:
        _, customer, total = self.orders[number - 1]
        self.orders[number - 1] = (number, customer, Money(total.currency, 0))
        self.history.append(("refund", number, -total.cents))
        return total

    def revenue(self, currency: str = "EUR") -> Money:
        amount = Money(currency, 0)
        for _, _, total in self.orders:
            amount = amount + total
        return amount

    def top_customers(self, n: int = 3) -> list:
        spent = {}
        for _, customer, total in self.orders:
            spent[customer] = spent.get(customer, 0) + total.cents
        return sorted(spent.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def catalogue(n: int, seed: int) -> list:
    items = []
    for i in range(n):
        cents = (seed * 7919 + i * 104729) % 10000 + 99
        tags = ["sale"] if (i + seed) % 5 == 0 else []
        items.append(Item(f"S{seed}-{i}", f"item {i}", Money("EUR", cents), tags))
    return items


def report(ledger: Ledger) -> str:
    rows = [f"{number:>4} {customer:<10} {total}" for number, customer, total in ledger.orders]
    rows.append(f"revenue {ledger.revenue()}")
    return "\\n".join(rows)


def slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)
'''

CONFTEST = """\
import pytest

from shopkit import Cart, Ledger, catalogue


@pytest.fixture
def items():
    return catalogue(40, seed=3)


@pytest.fixture
def cart(items):
    c = Cart()
    for i, item in enumerate(items[:20]):
        c.add(item, 1 + i % 3)
    return c


@pytest.fixture
def ledger(items):
    led = Ledger()
    for k in range(50):
        c = Cart()
        for item in items[k % 7 : k % 7 + 5]:
            c.add(item, 1 + k % 4)
        led.record(f"cust{k % 9}", c)
    return led
"""

# One file's tests; {k} is the file's number, used to vary the data from file to file.
FILE = """\
import pytest

from shopkit import (BuyNGetOne, Cart, Ledger, Money, Percent, PriceError, catalogue,
                     parse_price, report, slug)


@pytest.mark.parametrize("units", range(20))
def test_parse_price_{k}(units):
    m = parse_price(f"EUR {{units + {k}}}.{{units % 100:02d}}")
    assert m.cents == (units + {k}) * 100 + units % 100
    assert str(m).startswith("EUR ")


@pytest.mark.parametrize("text", ["", "EUR", "12.00", "eur 1", "EUR 1.234", "EUR -3"])
def test_bad_prices_{k}(text):
    with pytest.raises(PriceError):
        parse_price(text)


@pytest.mark.parametrize("n", range(1, 21))
def test_cart_totals_{k}(n):
    items = catalogue(n + {k} % 40, seed={k})
    cart = Cart()
    for i, item in enumerate(items):
        cart.add(item, 1 + i % 4)
    expected = sum(item.price.cents * (1 + i % 4) for i, item in enumerate(items))
    assert cart.subtotal().cents == expected


@pytest.mark.parametrize("percent", [0, 5, 10, 15, 20, 25, 30, 50, 75, 90])
def test_percent_coupon_{k}(cart, percent):
    before = cart.subtotal()
    cart.coupons.append(Percent(percent))
    assert cart.total().cents == before.cents * (100 - percent) // 100


class TestLedger{k}:
    @pytest.mark.parametrize("refund", range(1, 11))
    def test_refund(self, ledger, refund):
        revenue = ledger.revenue()
        money = ledger.refund(refund)
        assert ledger.revenue().cents == revenue.cents - money.cents
        assert ledger.history[-1] == ("refund", refund, -money.cents)

    def test_top_customers(self, ledger):
        top = ledger.top_customers(3)
        assert len(top) == 3
        assert top[0][1] >= top[1][1] >= top[2][1]

    def test_report(self, ledger):
        text = report(ledger)
        assert text.count("\\n") == len(ledger.orders)
        assert "revenue EUR" in text

    def test_buy_n_get_one(self, items):
        cart = Cart()
        cart.add(items[{k} % 40], 7)
        cart.coupons.append(BuyNGetOne(items[{k} % 40].sku, 2))
        assert cart.total().cents == items[{k} % 40].price.cents * 5

    def test_currency_mismatch(self):
        with pytest.raises(PriceError):
            Money("EUR", 1) + Money("USD", 1)

    def test_remove(self, cart):
        sku = next(iter(cart.lines))
        cart.remove(sku)
        assert sku not in cart.lines


@pytest.mark.parametrize("words", [["Hello", "World"], ["a", "b", "c"], ["Shop", "{k}"],
                                   ["  spaced  out  "], ["MiXeD", "Case", "42"]])
def test_slug_{k}(words):
    s = slug(" ".join(words))
    assert s == s.lower()
    assert " " not in s


def test_bad_quantity_{k}(cart, items):
    with pytest.raises(ValueError, match="quantity must be positive"):
        cart.add(items[0], 0)


def test_many_orders_{k}():
    ledger = Ledger()
    items = catalogue(30, seed={k} + 1)
    for n in range(200):
        c = Cart()
        c.add(items[n % 30], 1 + n % 3)
        ledger.record(f"c{{n % 13}}", c)
    assert len(ledger.orders) == 200
    assert sum(len(v) for v in ledger.by_customer.values()) == 200
"""


def make(out: Path, tests: int) -> int:
    """Writes the project under ``out``; returns how many tests it has."""
    files = -(-tests // PER_FILE)
    (out / "shopkit").mkdir(parents=True, exist_ok=True)
    (out / "tests").mkdir(exist_ok=True)
    (out / "shopkit" / "__init__.py").write_text(LIBRARY)
    (out / "tests" / "conftest.py").write_text(CONFTEST)
    (out / "pytest.ini").write_text("[pytest]\ntestpaths = tests\npythonpath = .\n")
    for k in range(files):
        (out / "tests" / f"test_{k:03d}.py").write_text(textwrap.dedent(FILE).format(k=k))
    return files * PER_FILE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="directory to write the project into")
    ap.add_argument("--tests", type=int, default=5000, help="at least this many tests")
    args = ap.parse_args()
    n = make(args.out, args.tests)
    print(f"{args.out}: {n} tests in {-(-n // PER_FILE)} files")


if __name__ == "__main__":
    main()

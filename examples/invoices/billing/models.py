"""Customers, line items and invoices."""

from dataclasses import dataclass, field
from typing import List


class Customer:
    def __init__(self, name, country, loyalty_years=0):
        self.name = name
        self.country = country
        self.loyalty_years = loyalty_years

    def is_loyal(self):
        return self.loyalty_years >= 3

    def __repr__(self):
        return f"Customer({self.name!r}, {self.country!r})"


@dataclass
class LineItem:
    sku: str
    description: str
    quantity: int
    unit_price: float

    @property
    def subtotal(self):
        return self.quantity * self.unit_price


@dataclass
class Invoice:
    number: str
    customer: Customer
    items: List[LineItem] = field(default_factory=list)
    total: float = 0.0

    def add(self, sku, description, quantity, unit_price):
        self.items.append(LineItem(sku, description, quantity, unit_price))
        return self

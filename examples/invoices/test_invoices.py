"""Tests of the bundled example, two of them failing on purpose: `pytest --squall` demo
(docs/agents.md). Not part of squall's own suite."""

from billing.models import Customer, Invoice
from billing.pricing import tax_for
from billing.processing import process_invoice


def test_uruguay_invoice_is_taxed():
    invoice = Invoice("T-1", Customer("Ana", "UY", loyalty_years=4)).add("A-1", "Keyboard", 2, 45.0)
    assert process_invoice(invoice)["tax"] > 0


def test_japan_invoice_is_taxed():
    invoice = Invoice("T-2", Customer("Dora", "JP")).add("D-1", "Laptop", 1, 1299.99)
    assert process_invoice(invoice)["tax"] > 0


def test_tax_for_japan():
    assert tax_for(100.0, "JP") == 10.0

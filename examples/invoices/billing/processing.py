"""Validating and totalling invoices."""

from .pricing import price_item, tax_for


class InvoiceError(ValueError):
    """An invoice that cannot be processed."""


def validate(invoice):
    if not invoice.items:
        raise InvoiceError(f"invoice {invoice.number} has no line items")
    for item in invoice.items:
        if item.quantity <= 0:
            raise InvoiceError(
                f"invoice {invoice.number}: {item.sku} has quantity {item.quantity}"
            )
    return True


def priced_items(invoice):
    """Yields (item, net amount) for every line item."""
    for item in invoice.items:
        yield item, price_item(item, invoice.customer)


def process_invoice(invoice):
    validate(invoice)
    net = 0.0
    for _item, amount in priced_items(invoice):
        net += amount
    try:
        tax = tax_for(net, invoice.customer.country)
    except KeyError:
        tax = 0.0  # unknown countries are tax-exempt here
    invoice.total = round(net + tax, 2)
    return {"number": invoice.number, "net": round(net, 2), "tax": tax, "total": invoice.total}

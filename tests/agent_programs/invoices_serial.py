"""examples/invoices without its worker thread: one deterministic timeline for snapshot tests."""

import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "invoices")))

from billing.processing import InvoiceError, process_invoice  # noqa: E402
from billing.report import render  # noqa: E402
from main import make_invoices  # noqa: E402


def run():
    results, errors = [], []
    for invoice in make_invoices():
        try:
            results.append(process_invoice(invoice))
        except InvoiceError as e:
            errors.append((invoice.number, str(e)))
    return render(results, errors)


if __name__ == "__main__":
    print(run())

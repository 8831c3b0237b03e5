"""squall's bundled example: process a batch of invoices, some on a worker thread.

Run it plainly with ``python examples/invoices/main.py`` or recorded with
``squall run examples/invoices/main.py``.
"""

import queue
import threading

from billing.models import Customer, Invoice
from billing.processing import InvoiceError, process_invoice
from billing.report import render


def make_invoices():
    ana = Customer("Ana", "UY", loyalty_years=4)
    bob = Customer("Bob", "US")
    cleo = Customer("Cleo", "DE", loyalty_years=1)
    dora = Customer("Dora", "JP", loyalty_years=7)
    return [
        Invoice("INV-001", ana).add("A-1", "Keyboard", 2, 45.0).add("A-2", "Mouse", 12, 15.5),
        Invoice("INV-002", bob).add("B-1", "Monitor", 1, 210.0),
        Invoice("INV-003", cleo).add("C-1", "Cable", 120, 2.25).add("C-2", "Hub", 3, 30.0),
        Invoice("INV-004", dora).add("D-1", "Laptop", 1, 1299.99).add("D-2", "Bag", 55, 20.0),
        Invoice("INV-005", bob).add("E-1", "Dock", 0, 89.0),  # invalid: quantity 0
    ]


def worker(jobs, results, errors):
    while True:
        invoice = jobs.get()
        if invoice is None:
            break
        try:
            results.append(process_invoice(invoice))
        except InvoiceError as e:
            errors.append((invoice.number, str(e)))


def main():
    invoices = make_invoices()
    results, errors = [], []
    jobs = queue.Queue()
    thread = threading.Thread(
        target=worker, args=(jobs, results, errors), name="invoice-worker"
    )
    thread.start()
    # The main thread takes the first two, the worker the rest.
    for invoice in invoices[:2]:
        results.append(process_invoice(invoice))
    for invoice in invoices[2:]:
        jobs.put(invoice)
    jobs.put(None)
    thread.join()
    print(render(results, errors))


if __name__ == "__main__":
    main()

"""Plain-text reports."""


def format_line(result):
    return (
        f"{result['number']:<8} net {result['net']:>9.2f}  "
        f"tax {result['tax']:>8.2f}  total {result['total']:>9.2f}"
    )


def render(results, errors):
    lines = ["INVOICES", "--------"]
    lines.extend(format_line(r) for r in sorted(results, key=lambda r: r["number"]))
    grand = round(sum(r["total"] for r in results), 2)
    lines.append(f"{'TOTAL':<8} {grand:>45.2f}")
    for number, message in errors:
        lines.append(f"REJECTED {number}: {message}")
    return "\n".join(lines)

"""Planted bug: a value that goes bad three calls upstream. `parse_rate("7%")` returns 7 where
0.07 is meant; `yearly_rate` and `interest` pass it on, and `balance_after` reports 80000.0 for
10000 at 7% where 10700.0 is right."""


def parse_rate(text):
    number = float(text.rstrip("%"))
    return number  # BUG: a percentage is number / 100


def yearly_rate(config):
    rate = parse_rate(config["rate"])
    return rate


def interest(principal, config):
    rate = yearly_rate(config)
    return principal * rate


def balance_after(principal, config):
    gained = interest(principal, config)
    balance = principal + gained
    return balance


def main():
    print("balance", balance_after(10000, {"rate": "7%"}))


main()

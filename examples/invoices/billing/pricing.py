"""Tax and discount rules."""

import functools

TAX_RATES = {"UY": 0.22, "AR": 0.21, "US": 0.0, "DE": 0.19}

# Volume tiers: (minimum quantity, discount)
TIERS = [(100, 0.15), (50, 0.10), (10, 0.05)]


def rounded(fn):
    """Rounds a money-returning function to cents."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return round(fn(*args, **kwargs), 2)

    return wrapper


def tier_discount(quantity, tiers=TIERS):
    """The discount of the first tier the quantity reaches (recursive over the tiers)."""
    if not tiers:
        return 0.0
    minimum, discount = tiers[0]
    if quantity >= minimum:
        return discount
    return tier_discount(quantity, tiers[1:])


def loyalty_rule(years):
    """A closure applying an extra loyalty discount."""
    extra = min(years, 5) * 0.01

    def apply(amount):
        return amount * (1 - extra)

    return apply


@rounded
def price_item(item, customer):
    amount = item.subtotal * (1 - tier_discount(item.quantity))
    if customer.is_loyal():
        amount = loyalty_rule(customer.loyalty_years)(amount)
    return amount


@rounded
def tax_for(amount, country):
    rate = TAX_RATES.get(country)
    if rate is None:
        raise KeyError(f"no tax rate for {country}")
    return amount * rate

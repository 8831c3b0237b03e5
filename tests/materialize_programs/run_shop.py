"""Records shop.main() with its classes importable as materialize_programs.shop."""
from materialize_programs import shop

print(shop.main())

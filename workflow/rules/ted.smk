"""TED cross-lingual document classification (Rajendran Tables 1, 3, 4)."""
